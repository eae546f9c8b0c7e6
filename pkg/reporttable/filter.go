package reporttable

import (
	"slices"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// Filter picks the cluster entries of a report a reader asked for. The zero Filter keeps
// every entry.
type Filter struct {
	// Attention keeps only the entries that need attention (NeedsAttention).
	Attention bool
	// Clusters keeps only the entries of these managed clusters; empty keeps every cluster.
	Clusters []string
}

// IsSet tells whether f leaves any entry out.
func (f Filter) IsSet() bool {
	return f.Attention || len(f.Clusters) > 0
}

// Keeps tells whether f keeps entry e.
func (f Filter) Keeps(e *appsv1alpha1.ClusterCondition) bool {
	if len(f.Clusters) > 0 && !slices.Contains(f.Clusters, e.Cluster) {
		return false
	}
	return !f.Attention || NeedsAttention(e)
}

// Apply returns a copy of r whose statuses.clusterConditions holds only the entries f
// keeps; the summary, resources and truncation stay as the hub wrote them (the summary
// counts every cluster). It does not change r.
func (f Filter) Apply(r *appsv1alpha1.MulticlusterApplicationSetReport) *appsv1alpha1.MulticlusterApplicationSetReport {
	out := r.DeepCopy()
	if !f.IsSet() {
		return out
	}
	out.Statuses.ClusterConditions = slices.DeleteFunc(out.Statuses.ClusterConditions, func(e appsv1alpha1.ClusterCondition) bool {
		return !f.Keeps(&e)
	})
	if len(out.Statuses.ClusterConditions) == 0 {
		out.Statuses.ClusterConditions = nil
	}
	return out
}

// NeedsAttention tells whether an entry of a report is one a platform engineer looks at:
// not Synced, not Healthy (Progressing and no status yet included), its agent known to be
// unavailable, or with any condition (errors and warnings, the hub's own included).
//
// An entry without agentAvailable is not counted as unavailable: the hub leaves the field
// out of hub-rendered entries (no agent) and out of terse entries of a large report when
// it was true (statuses.truncation.terseClusterConditions).
func NeedsAttention(e *appsv1alpha1.ClusterCondition) bool {
	return e.SyncStatus != string(appsv1alpha1.SyncStatusSynced) ||
		e.HealthStatus != string(appsv1alpha1.HealthStatusHealthy) ||
		(e.AgentAvailable != nil && !*e.AgentAvailable) ||
		len(e.Conditions) > 0
}
