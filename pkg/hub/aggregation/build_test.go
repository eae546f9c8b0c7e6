package aggregation

import (
	"fmt"
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

var guestbook = types.NamespacedName{Namespace: appSetNamespace, Name: "guestbook"}

func TestBuildMergesSources(t *testing.T) {
	const syncErr = "one or more objects failed to apply, reason: Deployment.apps \"guestbook-ui\" is invalid"
	notApplied := pullmodel.HubCondition(pullmodel.ConditionClusterApplyError,
		`ManifestWork c1/c1-guestbook-1a2b3 is not applied on cluster c1: Failed to apply manifest: namespaces "openshift-gitops" not found`)
	invalid := pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, "annotation apps.open-cluster-management.io/destination-server is not a URL")
	tests := map[string]struct {
		works         []workv1.ManifestWork
		reports       []appsv1alpha1.ApplicationStatusReport
		agents        map[string]pullmodel.AgentAvailability
		hubConditions map[types.NamespacedName][]argov1alpha1.ApplicationCondition
		undelivered   []UndeliveredApplication
		want          appsv1alpha1.AppConditions
	}{
		"an Application the hub never delivered has an entry with the hub's reason, counted as neither synced nor healthy": {
			works:  []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "", "", "").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": available()},
			undelivered: []UndeliveredApplication{
				{Name: "c2-guestbook", Cluster: "c2", Work: "c2-guestbook-9f8e7", Conditions: []argov1alpha1.ApplicationCondition{invalid}},
				{Name: "guestbook-nowhere", Work: "guestbook-nowhere-1", Conditions: []argov1alpha1.ApplicationCondition{invalid}},
			},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{
					{Cluster: "", App: "argocd/guestbook-nowhere//guestbook-nowhere-1", Delivery: appsv1alpha1.DeliveryPull,
						Conditions: []appsv1alpha1.Condition{{Type: pullmodel.ConditionInvalidSpec, Message: invalid.Message}}},
					{Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3", SyncStatus: "Synced", HealthStatus: "Healthy",
						AgentAvailable: ptr.To(true), Delivery: appsv1alpha1.DeliveryPull},
					{Cluster: "c2", App: "argocd/c2-guestbook/c2/c2-guestbook-9f8e7", Delivery: appsv1alpha1.DeliveryPull,
						Conditions: []appsv1alpha1.Condition{{Type: pullmodel.ConditionInvalidSpec, Message: invalid.Message}}},
				},
				// The entry without a cluster is not a cluster.
				Summary: summary(2, 1, 2, 1, 2, 0),
			},
		},
		"a work the cluster never applied: the hub Application's reason, nothing else known": {
			works:         []workv1.ManifestWork{newWork("c1", "c1-guestbook").obj()},
			agents:        map[string]pullmodel.AgentAvailability{"c1": available()},
			hubConditions: map[types.NamespacedName][]argov1alpha1.ApplicationCondition{{Namespace: appSetNamespace, Name: "c1-guestbook"}: {notApplied}},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					Conditions:     []appsv1alpha1.Condition{{Type: pullmodel.ConditionClusterApplyError, Message: notApplied.Message}},
					AgentAvailable: ptr.To(true), Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: summary(1, 0, 1, 0, 1, 0),
			},
		},
		"hub conditions first, then the agent's unavailability and the report's; another Application's are not this one's": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r1", "", "").obj()},
			reports: []appsv1alpha1.ApplicationStatusReport{newReport("c1", "c1-guestbook").observedAt(t1).
				state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1").condition("ComparisonError", "repository not accessible").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": unavailable()},
			hubConditions: map[types.NamespacedName][]argov1alpha1.ApplicationCondition{
				{Namespace: appSetNamespace, Name: "c1-guestbook"}: {invalid},
				{Namespace: appSetNamespace, Name: "c2-guestbook"}: {notApplied},
			},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "Synced", HealthStatus: "Healthy", SyncRevision: "r1",
					Conditions: []appsv1alpha1.Condition{
						{Type: pullmodel.ConditionInvalidSpec, Message: invalid.Message},
						{Type: appsv1alpha1.ConditionAgentUnavailable, Message: "The argocd-pull agent has not been available since 2026-11-01T10:10:00Z (Available is Unknown (ManagedClusterLeaseUpdateStopped)); sync and health come from the ManifestWork, other details may be stale."},
						{Type: "ComparisonError", Message: "repository not accessible"},
					},
					AgentAvailable: ptr.To(false), LastReportedAt: &t1, Stale: true, Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: withAgentsUnavailable(summary(1, 1, 0, 1, 0, 0), 1),
			},
		},
		"feedback only (no agent report yet)": {
			works:  []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": available()},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "Synced", HealthStatus: "Healthy", SyncRevision: "r1",
					OperationStatePhase: "Succeeded", OperationStateStartedAt: "2026-11-01T10:00:00Z",
					AgentAvailable: ptr.To(true), Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: summary(1, 1, 0, 1, 0, 0),
			},
		},
		"report at least as new as the feedback wins; details from the report": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Progressing", "Synced", "r1", "Running", "2026-11-01T10:00:00Z").obj()},
			reports: []appsv1alpha1.ApplicationStatusReport{newReport("c1", "c1-guestbook").observedAt(t1).
				state(appsv1alpha1.HealthStatusDegraded, appsv1alpha1.SyncStatusOutOfSync, "r1").
				operation(appsv1alpha1.OperationFailed, t0, syncErr).
				condition("SyncError", "failed to sync Deployment guestbook/guestbook-ui").
				resource("apps", "v1", "Deployment", "guestbook", "guestbook-ui", appsv1alpha1.SyncStatusOutOfSync, appsv1alpha1.HealthStatusDegraded, "0/1 ready").
				resource("", "v1", "Service", "guestbook", "guestbook-ui", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusHealthy, "").
				obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": available()},
			want: appsv1alpha1.AppConditions{
				Resources: []appsv1alpha1.ResourceRef{
					{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
					{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
				},
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "OutOfSync", HealthStatus: "Degraded", SyncRevision: "r1",
					OperationStatePhase: "Failed", OperationStateStartedAt: "2026-11-01T10:00:00Z",
					Conditions: []appsv1alpha1.Condition{
						{Type: appsv1alpha1.ConditionOperationFailed, Message: syncErr},
						{Type: "SyncError", Message: "failed to sync Deployment guestbook/guestbook-ui"},
					},
					FailingResources: []appsv1alpha1.FailingResource{{
						APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
						SyncStatus: "OutOfSync", HealthStatus: "Degraded", Message: "0/1 ready",
					}},
					AgentAvailable: ptr.To(true), LastReportedAt: &t1, Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: summary(1, 0, 1, 0, 1, 0),
			},
		},
		"feedback with an operation newer than the report wins the scalars": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Progressing", "Synced", "r2", "Running", "2026-11-01T10:10:00Z").obj()},
			reports: []appsv1alpha1.ApplicationStatusReport{newReport("c1", "c1-guestbook").observedAt(t1).
				state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1").
				operation(appsv1alpha1.OperationSucceeded, t0, "").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": available()},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "Synced", HealthStatus: "Progressing", SyncRevision: "r2",
					OperationStatePhase: "Running", OperationStateStartedAt: "2026-11-01T10:10:00Z",
					AgentAvailable: ptr.To(true), LastReportedAt: &t1, Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: summary(1, 1, 0, 0, 1, 1),
			},
		},
		"agent unavailable: scalars from the feedback, marked stale, details kept": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r2", "", "").obj()},
			reports: []appsv1alpha1.ApplicationStatusReport{newReport("c1", "c1-guestbook").observedAt(t1).
				state(appsv1alpha1.HealthStatusDegraded, appsv1alpha1.SyncStatusOutOfSync, "r1").
				condition("ComparisonError", "repository not accessible").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": unavailable()},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "Synced", HealthStatus: "Healthy", SyncRevision: "r2",
					Conditions: []appsv1alpha1.Condition{
						{Type: appsv1alpha1.ConditionAgentUnavailable, Message: "The argocd-pull agent has not been available since 2026-11-01T10:10:00Z (Available is Unknown (ManagedClusterLeaseUpdateStopped)); sync and health come from the ManifestWork, other details may be stale."},
						{Type: "ComparisonError", Message: "repository not accessible"},
					},
					AgentAvailable: ptr.To(false), LastReportedAt: &t1, Stale: true, Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: withAgentsUnavailable(summary(1, 1, 0, 1, 0, 0), 1),
			},
		},
		"multi-source revisions and the tree's not-healthy children from the report; fresh while the agent is available": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Degraded", "Synced", "", "", "").obj()},
			reports: []appsv1alpha1.ApplicationStatusReport{newReport("c1", "c1-guestbook").observedAt(t1).
				state(appsv1alpha1.HealthStatusDegraded, appsv1alpha1.SyncStatusSynced, "").revisions("r1", "r2").
				child("Pod", "web-1", "Deployment/web", appsv1alpha1.HealthStatusDegraded, "ImagePullBackOff").obj()},
			agents: map[string]pullmodel.AgentAvailability{"c1": available()},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3",
					SyncStatus: "Synced", HealthStatus: "Degraded", SyncRevisions: []string{"r1", "r2"},
					NotHealthyChildren: []appsv1alpha1.FailingResource{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-1",
						HealthStatus: "Degraded", Message: "ImagePullBackOff", Parent: "Deployment/web"}},
					AgentAvailable: ptr.To(true), LastReportedAt: &t1, Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: summary(1, 1, 0, 0, 1, 0),
			},
		},
		"addon not enabled: marked, feedback only": {
			works: []workv1.ManifestWork{newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "", "", "").obj()},
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook-1a2b3", SyncStatus: "Synced", HealthStatus: "Healthy",
					Conditions: []appsv1alpha1.Condition{{Type: appsv1alpha1.ConditionAgentUnavailable,
						Message: "The argocd-pull agent is not available (the argocd-pull addon is not enabled on the cluster); sync and health come from the ManifestWork, other details may be stale."}},
					AgentAvailable: ptr.To(false), Delivery: appsv1alpha1.DeliveryPull,
				}},
				Summary: withAgentsUnavailable(summary(1, 1, 0, 1, 0, 0), 1),
			},
		},
		"two Applications on one cluster are two entries; resources de-duplicated; a report of another cluster does not match": {
			works: []workv1.ManifestWork{
				newWork("c2", "c2-b").feedback("Healthy", "Synced", "", "", "").obj(),
				newWork("c1", "c1-a").feedback("Healthy", "Synced", "", "", "").obj(),
				newWork("c1", "c1-b").feedback("Missing", "Unknown", "", "", "").obj(),
			},
			reports: []appsv1alpha1.ApplicationStatusReport{
				newReport("c1", "c1-a").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "").
					resource("", "v1", "ConfigMap", "ns", "cm", appsv1alpha1.SyncStatusSynced, "", "").obj(),
				newReport("c2", "c2-b").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "").
					resource("", "v1", "ConfigMap", "ns", "cm", appsv1alpha1.SyncStatusSynced, "", "").obj(),
				// Written into c2's namespace but naming c1's Application: not c1's data.
				newReport("c2", "c1-b").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "").obj(),
			},
			agents: map[string]pullmodel.AgentAvailability{"c1": available(), "c2": available()},
			want: appsv1alpha1.AppConditions{
				Resources: []appsv1alpha1.ResourceRef{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}},
				ClusterConditions: []appsv1alpha1.ClusterCondition{
					{Cluster: "c1", App: "argocd/c1-a/c1/c1-a-1a2b3", SyncStatus: "Synced", HealthStatus: "Healthy", AgentAvailable: ptr.To(true), LastReportedAt: &t1, Delivery: appsv1alpha1.DeliveryPull},
					{Cluster: "c1", App: "argocd/c1-b/c1/c1-b-1a2b3", SyncStatus: "Unknown", HealthStatus: "Missing", AgentAvailable: ptr.To(true), Delivery: appsv1alpha1.DeliveryPull},
					{Cluster: "c2", App: "argocd/c2-b/c2/c2-b-1a2b3", SyncStatus: "Synced", HealthStatus: "Healthy", AgentAvailable: ptr.To(true), LastReportedAt: &t1, Delivery: appsv1alpha1.DeliveryPull},
				},
				Summary: summary(2, 2, 1, 2, 1, 0),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Build(Inputs{ApplicationSet: guestbook, Works: tc.works, Reports: tc.reports, Agents: tc.agents, HubConditions: tc.hubConditions, Undelivered: tc.undelivered}, DefaultLimits)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// summary is a report's summary with every agent available (withAgentsUnavailable for others).
func summary(clusters, synced, notSynced, healthy, notHealthy, inProgress int) appsv1alpha1.ReportSummary {
	return appsv1alpha1.ReportSummary{
		Clusters: fmt.Sprint(clusters), Synced: fmt.Sprint(synced), NotSynced: fmt.Sprint(notSynced),
		Healthy: fmt.Sprint(healthy), NotHealthy: fmt.Sprint(notHealthy), InProgress: fmt.Sprint(inProgress),
		AgentsUnavailable: "0",
	}
}

func withAgentsUnavailable(s appsv1alpha1.ReportSummary, n int) appsv1alpha1.ReportSummary {
	s.AgentsUnavailable = fmt.Sprint(n)
	return s
}
