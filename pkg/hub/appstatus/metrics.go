package appstatus

import (
	"context"
	"fmt"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/cachegauge"
)

// Values of the agent label of clustersByAgent.
const (
	agentAvailable   = "available"
	agentUnavailable = "unavailable"
	agentNotEnabled  = "not-enabled"
)

// statusUnknown stands for a sync or health status not written yet.
const statusUnknown = string(appsv1alpha1.SyncStatusUnknown)

// The controller's metrics (docs/metrics.md): what it mirrors, counted from the cache at
// each scrape.
var (
	clustersByAgent = cachegauge.New("argocd_pull_clusters",
		"ManagedClusters by the availability of their argocd-pull agent: available (its ManagedClusterAddOn is Available), "+
			"unavailable (the addon is enabled, the agent has not renewed its lease or not reported available yet), "+
			"not-enabled (no argocd-pull ManagedClusterAddOn in the cluster namespace).",
		[]string{"agent"}, countClustersByAgent)
	applicationsByStatus = cachegauge.New("argocd_pull_applications",
		"Pulled hub Applications by the sync and health status mirrored from their cluster (Unknown until the cluster reports).",
		[]string{"sync_status", "health_status"}, countApplicationsByStatus)
	applicationsByCondition = cachegauge.New("argocd_pull_applications_with_condition",
		"Pulled hub Applications holding a condition the hub's controllers set, by its type: InvalidSpecError and "+
			"DeliveryError (delivery held by the hub), ClusterApplyError (the cluster did not apply the ManifestWork), "+
			"NotReportedError (delivered, but the cluster's agent does not report it), StaleStatusWarning (the cluster's agent is unavailable: "+
			"what the hub shows is its last report).",
		[]string{"condition"}, countApplicationsByCondition)
)

func init() {
	metrics.Registry.MustRegister(clustersByAgent, applicationsByStatus, applicationsByCondition)
}

// readMetricsFrom makes the controller's gauges count from reader.
func readMetricsFrom(reader client.Reader) {
	clustersByAgent.Read(reader)
	applicationsByStatus.Read(reader)
	applicationsByCondition.Read(reader)
}

func countClustersByAgent(ctx context.Context, reader client.Reader) ([]cachegauge.Count, error) {
	clusters := &clusterv1.ManagedClusterList{}
	if err := reader.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	// The manager's cache holds only argocd-pull ManagedClusterAddOns; the name is checked
	// all the same, for a reader that holds every addon's.
	addons := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := reader.List(ctx, addons, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterAddOns: %w", err)
	}
	byCluster := make(map[string]*addonv1alpha1.ManagedClusterAddOn, len(addons.Items))
	for i := range addons.Items {
		if addons.Items[i].Name == apps.AddonName {
			byCluster[addons.Items[i].Namespace] = &addons.Items[i]
		}
	}
	counts := map[string]float64{agentAvailable: 0, agentUnavailable: 0, agentNotEnabled: 0}
	for i := range clusters.Items {
		mca, enabled := byCluster[clusters.Items[i].Name]
		switch {
		case !enabled:
			counts[agentNotEnabled]++
		case pullmodel.AgentAvailabilityOf(mca).Available:
			counts[agentAvailable]++
		default:
			counts[agentUnavailable]++
		}
	}
	out := make([]cachegauge.Count, 0, len(counts))
	for _, agent := range []string{agentAvailable, agentUnavailable, agentNotEnabled} {
		out = append(out, cachegauge.Count{LabelValues: []string{agent}, Value: counts[agent]})
	}
	return out, nil
}

func countApplicationsByStatus(ctx context.Context, reader client.Reader) ([]cachegauge.Count, error) {
	applications := &argov1alpha1.ApplicationList{}
	if err := reader.List(ctx, applications, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	type status struct{ sync, health string }
	counts := map[status]float64{}
	// Every status Argo CD knows, at zero, then whatever the Applications hold.
	var order []status
	for _, sync := range []appsv1alpha1.SyncStatusCode{appsv1alpha1.SyncStatusSynced, appsv1alpha1.SyncStatusOutOfSync, appsv1alpha1.SyncStatusUnknown} {
		for _, health := range []appsv1alpha1.HealthStatusCode{appsv1alpha1.HealthStatusHealthy, appsv1alpha1.HealthStatusProgressing,
			appsv1alpha1.HealthStatusDegraded, appsv1alpha1.HealthStatusSuspended, appsv1alpha1.HealthStatusMissing, appsv1alpha1.HealthStatusUnknown} {
			s := status{sync: string(sync), health: string(health)}
			counts[s] = 0
			order = append(order, s)
		}
	}
	for i := range applications.Items {
		app := &applications.Items[i]
		if !pullmodel.IsMarked(app) || !app.DeletionTimestamp.IsZero() {
			continue
		}
		s := status{sync: string(app.Status.Sync.Status), health: string(app.Status.Health.Status)}
		if s.sync == "" {
			s.sync = statusUnknown
		}
		if s.health == "" {
			s.health = statusUnknown
		}
		if _, known := counts[s]; !known {
			order = append(order, s)
		}
		counts[s]++
	}
	out := make([]cachegauge.Count, 0, len(order))
	for _, s := range order {
		out = append(out, cachegauge.Count{LabelValues: []string{s.sync, s.health}, Value: counts[s]})
	}
	return out, nil
}

// countApplicationsByCondition counts the live pulled Applications holding each hub
// condition type, whichever controller wrote it (the propagation controller's and this
// one's): an Application holding two types counts once under each.
func countApplicationsByCondition(ctx context.Context, reader client.Reader) ([]cachegauge.Count, error) {
	applications := &argov1alpha1.ApplicationList{}
	if err := reader.List(ctx, applications, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	types := slices.Concat(pullmodel.PropagationConditionTypes, pullmodel.AppStatusConditionTypes)
	counts := make(map[argov1alpha1.ApplicationConditionType]float64, len(types))
	for i := range applications.Items {
		app := &applications.Items[i]
		if !pullmodel.IsMarked(app) || !app.DeletionTimestamp.IsZero() {
			continue
		}
		held := map[argov1alpha1.ApplicationConditionType]bool{}
		for _, c := range pullmodel.HubConditions(app.Status.Conditions) {
			held[c.Type] = true
		}
		for t := range held {
			counts[t]++
		}
	}
	out := make([]cachegauge.Count, 0, len(types))
	for _, t := range types {
		out = append(out, cachegauge.Count{LabelValues: []string{string(t)}, Value: counts[t]})
	}
	return out, nil
}
