package aggregation

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Inputs is everything one ApplicationSet's report is built from.
type Inputs struct {
	// ApplicationSet is the ApplicationSet's namespace and name.
	ApplicationSet types.NamespacedName
	// Works are the ManifestWorks of the ApplicationSet's pulled Applications, one per
	// Application and cluster; works being deleted are left out by the caller.
	Works []workv1.ManifestWork
	// Reports are the agents' reports of those Applications.
	Reports []appsv1alpha1.ApplicationStatusReport
	// Agents is the availability of the agent of each cluster in Works, by cluster name.
	Agents map[string]pullmodel.AgentAvailability
	// HubRendered are the ApplicationSet's hub-rendered Applications, one per Application
	// and ManifestWork; Applications and works being deleted are left out by the caller.
	HubRendered []HubRenderedApplication
	// HubConditions are the hub conditions (pullmodel.HubConditions) of the ApplicationSet's
	// pulled hub Applications, by Application: what the hub says keeps each from running.
	HubConditions map[types.NamespacedName][]argov1alpha1.ApplicationCondition
	// Undelivered are the ApplicationSet's pulled hub Applications that have hub conditions
	// and no ManifestWork (refused from the start: bad input, a target that does not
	// exist, a work the hub would not take). Each gets an entry naming its target cluster,
	// so the report shows why the ApplicationSet does not run there.
	Undelivered []UndeliveredApplication
}

// UndeliveredApplication is a pulled hub Application with no ManifestWork.
type UndeliveredApplication struct {
	// Name is the hub Application's name (its namespace is the ApplicationSet's).
	Name string
	// Cluster is the cluster its annotation names (may be empty or not exist).
	Cluster string
	// Work is the name its ManifestWork would have (pullmodel.WorkName).
	Work string
	// Conditions are its hub conditions.
	Conditions []argov1alpha1.ApplicationCondition
}

// reportKey identifies an Application on a cluster: the cluster and the hub Application.
type reportKey struct {
	cluster, hubNamespace, hubName string
}

// buildReusing computes the report of one ApplicationSet: one entry per ManifestWork (so
// per cluster and Application), pulled or hub-rendered, sorted by cluster and app; the
// union of the reported and applied resources; the summary; all within limits (see Unlist
// and Bound). It never changes in, whose objects may be the cache's own. It takes from
// prev the pulled entries whose inputs did not change (nil builds every entry) and also
// returns the memo of this build, for the next. The result shares lists with the memo: a
// caller that hands it to something that writes into it (a client decoding the API
// server's answer) hands over a deep copy.
func buildReusing(in Inputs, limits Limits, prev entryMemo) (appsv1alpha1.AppConditions, entryMemo) {
	built, next := build(in, prev)
	return Bound(Unlist(built, limits.ListAllUpTo), limits), next
}

// build is buildReusing without bounds.
func build(in Inputs, prev entryMemo) (appsv1alpha1.AppConditions, entryMemo) {
	reports := indexReports(in.Reports)
	var (
		entries   = make([]appsv1alpha1.ClusterCondition, 0, len(in.Works)+len(in.Undelivered)+len(in.HubRendered))
		resources = map[appsv1alpha1.ResourceRef]struct{}{}
		// agentOmitted counts the resources the agents' reports left out (their own bound).
		agentOmitted int32
		next         = make(entryMemo, len(in.Works))
	)
	for i := range in.Works {
		mw := &in.Works[i]
		hubNamespace := mw.Annotations[apps.AnnotationHubApplicationNamespace]
		hubName := mw.Annotations[apps.AnnotationHubApplicationName]
		if hubName == "" {
			continue
		}
		key := reportKey{cluster: mw.Namespace, hubNamespace: hubNamespace, hubName: hubName}
		report := reports[key]
		agent, ok := in.Agents[mw.Namespace]
		if !ok {
			agent = pullmodel.AgentAvailabilityOf(nil)
		}
		hubConditions := in.HubConditions[types.NamespacedName{Namespace: hubNamespace, Name: hubName}]
		m, ok := prev.reuse(key, mw, report, agent, hubConditions)
		if !ok {
			m = pulledEntry(in.ApplicationSet.Namespace, mw, report, agent, hubConditions)
		}
		next[key] = m
		entries = append(entries, m.entry)
		for _, r := range m.resources {
			resources[r] = struct{}{}
		}
		agentOmitted += m.agentOmitted
	}
	for _, u := range in.Undelivered {
		entries = append(entries, undeliveredEntry(in.ApplicationSet.Namespace, u))
	}
	for _, h := range in.HubRendered {
		entry, applied := hubRenderedEntry(in.ApplicationSet.Namespace, h)
		entries = append(entries, entry)
		for _, r := range applied {
			resources[r] = struct{}{}
		}
	}
	slices.SortFunc(entries, func(a, b appsv1alpha1.ClusterCondition) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.App, b.App))
	})
	out := appsv1alpha1.AppConditions{
		Resources:         sortedResources(resources),
		ClusterConditions: entries,
		Summary:           summarize(entries),
	}
	if agentOmitted > 0 {
		// Bound adds what it leaves out itself.
		out.Truncation = &appsv1alpha1.ReportTruncation{AgentOmittedResources: agentOmitted}
	}
	return out, next
}

// pulledEntry computes the entry of a pulled Application on one cluster with what the
// report adds to statuses.resources, as a memo of its inputs.
func pulledEntry(appSetNamespace string, mw *workv1.ManifestWork, rep *appsv1alpha1.ApplicationStatusReport,
	agent pullmodel.AgentAvailability, hubConditions []argov1alpha1.ApplicationCondition) memoizedEntry {
	var (
		refs    []appsv1alpha1.ResourceRef
		omitted int32
	)
	if rep != nil {
		refs = make([]appsv1alpha1.ResourceRef, 0, len(rep.Status.Resources))
		for _, r := range rep.Status.Resources {
			refs = append(refs, resourceRef(r))
		}
		if t := rep.Status.Truncation; t != nil {
			omitted = t.OmittedResources
		}
	}
	return memoize(mw, rep, agent, hubConditions, clusterEntry(appSetNamespace, mw, rep, agent, hubConditions), refs, omitted)
}

// indexReports keys the reports by cluster and hub Application. The cluster is the
// report's namespace, which only that cluster's agent may write, not what the report
// says about itself. Of two reports of one Application, pullmodel.ReportSupersedes picks.
func indexReports(in []appsv1alpha1.ApplicationStatusReport) map[reportKey]*appsv1alpha1.ApplicationStatusReport {
	out := make(map[reportKey]*appsv1alpha1.ApplicationStatusReport, len(in))
	for i := range in {
		r := &in[i]
		key := reportKey{cluster: r.Namespace, hubNamespace: r.Source.HubApplicationNamespace, hubName: r.Source.HubApplicationName}
		if cur, ok := out[key]; ok && !pullmodel.ReportSupersedes(r, cur) {
			continue
		}
		out[key] = r
	}
	return out
}

// clusterEntry is the entry of one Application on one cluster. The scalars follow
// pullmodel.MergeScalars; failing resources come from the report. Conditions are, in
// this order: the hub's conditions of the hub Application (hubConditions, all errors: why
// it does not run, known before and without any report, so they come first), the agent's
// unavailability (which qualifies what follows) and the report's, errors first.
func clusterEntry(appSetNamespace string, mw *workv1.ManifestWork, rep *appsv1alpha1.ApplicationStatusReport, agent pullmodel.AgentAvailability,
	hubConditions []argov1alpha1.ApplicationCondition) appsv1alpha1.ClusterCondition {
	values, _ := pullmodel.ApplicationFeedback(mw)
	// Malformed values are left out by ScalarsFromFeedback; the appstatus controller logs them.
	fb, _ := pullmodel.ScalarsFromFeedback(values)
	var reported *appsv1alpha1.ApplicationReportStatus
	if rep != nil {
		reported = &rep.Status
	}
	scalars, _ := pullmodel.MergeScalars(fb, reported, agent.Available)

	entry := appsv1alpha1.ClusterCondition{
		Cluster:        mw.Namespace,
		App:            fmt.Sprintf("%s/%s/%s/%s", appSetNamespace, mw.Annotations[apps.AnnotationHubApplicationName], mw.Namespace, mw.Name),
		AgentAvailable: ptr.To(agent.Available),
		Delivery:       appsv1alpha1.DeliveryPull,
	}
	if scalars.Sync != nil {
		entry.SyncStatus = string(*scalars.Sync)
	}
	if scalars.Health != nil {
		entry.HealthStatus = string(*scalars.Health)
	}
	if scalars.Revision != nil {
		entry.SyncRevision = *scalars.Revision
	}
	if scalars.OperationPhase != nil {
		entry.OperationStatePhase = string(*scalars.OperationPhase)
	}
	if scalars.OperationStartedAt != nil {
		entry.OperationStateStartedAt = scalars.OperationStartedAt.UTC().Format(time.RFC3339)
	}
	for _, c := range hubConditions {
		entry.Conditions = append(entry.Conditions, appsv1alpha1.Condition{Type: c.Type, Message: c.Message})
	}
	if !agent.Available {
		entry.Conditions = append(entry.Conditions, agentUnavailableCondition(agent))
	}
	if rep != nil {
		observed := rep.Status.ObservedAt
		entry.LastReportedAt = &observed
		// What the agent said last; while it is unavailable, kept and marked as such.
		entry.Stale = !agent.Available
		entry.SyncRevisions = slices.Clone(rep.Status.Sync.Revisions)
		entry.Conditions = append(entry.Conditions, reportConditions(&rep.Status)...)
		entry.FailingResources = report.FailingResources(rep.Status.Resources)
		entry.NotHealthyChildren = report.NotHealthyChildren(rep.Status.ResourceTree)
	}
	return entry
}

// undeliveredEntry is the entry of an Application the hub never delivered: its target
// cluster, the name its ManifestWork would have, and the hub's conditions saying why. It
// has no sync or health, so it counts as neither synced nor healthy.
func undeliveredEntry(appSetNamespace string, u UndeliveredApplication) appsv1alpha1.ClusterCondition {
	entry := appsv1alpha1.ClusterCondition{
		Cluster:  u.Cluster,
		App:      fmt.Sprintf("%s/%s/%s/%s", appSetNamespace, u.Name, u.Cluster, u.Work),
		Delivery: appsv1alpha1.DeliveryPull,
	}
	for _, c := range u.Conditions {
		entry.Conditions = append(entry.Conditions, appsv1alpha1.Condition{Type: c.Type, Message: c.Message})
	}
	return entry
}

func agentUnavailableCondition(agent pullmodel.AgentAvailability) appsv1alpha1.Condition {
	const stale = "sync and health come from the ManifestWork, other details may be stale."
	if agent.Since == nil {
		return appsv1alpha1.Condition{
			Type:    appsv1alpha1.ConditionAgentUnavailable,
			Message: fmt.Sprintf("The argocd-pull agent is not available (%s); %s", agent.Reason, stale),
		}
	}
	return appsv1alpha1.Condition{
		Type: appsv1alpha1.ConditionAgentUnavailable,
		Message: fmt.Sprintf("The argocd-pull agent has not been available since %s (%s); %s",
			agent.Since.UTC().Format(time.RFC3339), agent.Reason, stale),
	}
}

// reportConditions are the failed operation's message and the reported Argo CD
// conditions, errors first; the order within each kind is the agent's.
func reportConditions(st *appsv1alpha1.ApplicationReportStatus) []appsv1alpha1.Condition {
	var out []appsv1alpha1.Condition
	if op := st.OperationState; op != nil {
		if c, ok := report.FailedOperation(op.Phase, op.Message); ok {
			out = append(out, c)
		}
	}
	for _, c := range st.Conditions {
		out = append(out, appsv1alpha1.Condition{Type: c.Type, Message: c.Message})
	}
	report.SortConditions(out)
	return out
}

func resourceRef(r appsv1alpha1.ResourceStatusReport) appsv1alpha1.ResourceRef {
	return appsv1alpha1.ResourceRef{APIVersion: report.APIVersion(r.Group, r.Version), Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
}

func sortedResources(set map[appsv1alpha1.ResourceRef]struct{}) []appsv1alpha1.ResourceRef {
	if len(set) == 0 {
		return nil
	}
	out := make([]appsv1alpha1.ResourceRef, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b appsv1alpha1.ResourceRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.APIVersion, b.APIVersion))
	})
	return out
}

// summarize counts entries by state, as the established report schema defines it: clusters is the number of distinct
// clusters; the other counters count entries, so an ApplicationSet with two Applications
// on a cluster counts both. Synced and Healthy count exactly those statuses; anything
// else, Unknown and no status included, counts as notSynced and notHealthy. Progressing
// counts as inProgress and also as notHealthy. agentsUnavailable counts clusters, as an
// agent serves every Application of its cluster: those with an entry whose agent is known
// not to be available (hub-rendered entries have no agent).
func summarize(entries []appsv1alpha1.ClusterCondition) appsv1alpha1.ReportSummary {
	clusters := map[string]struct{}{}
	agentsUnavailable := map[string]struct{}{}
	var synced, notSynced, healthy, notHealthy, inProgress int
	for _, e := range entries {
		if e.Cluster != "" {
			clusters[e.Cluster] = struct{}{}
		}
		if e.AgentAvailable != nil && !*e.AgentAvailable {
			agentsUnavailable[e.Cluster] = struct{}{}
		}
		if e.SyncStatus == string(appsv1alpha1.SyncStatusSynced) {
			synced++
		} else {
			notSynced++
		}
		switch e.HealthStatus {
		case string(appsv1alpha1.HealthStatusHealthy):
			healthy++
		case string(appsv1alpha1.HealthStatusProgressing):
			inProgress++
			notHealthy++
		default:
			notHealthy++
		}
	}
	return appsv1alpha1.ReportSummary{
		Clusters:   fmt.Sprint(len(clusters)),
		Synced:     fmt.Sprint(synced),
		NotSynced:  fmt.Sprint(notSynced),
		Healthy:    fmt.Sprint(healthy),
		NotHealthy: fmt.Sprint(notHealthy),
		InProgress: fmt.Sprint(inProgress),

		AgentsUnavailable: fmt.Sprint(len(agentsUnavailable)),
	}
}
