package aggregation

import (
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// Unlist leaves out of a report of more than upTo entries those whose detail is in their
// cluster's ApplicationStatusReport and that need no attention (see listed), counting them
// in truncation.unlistedClusterConditions; the summary, computed before, still counts
// them. A report of a large fleet then changes only when a cluster starts or stops
// needing attention, not with every revision a healthy cluster syncs to: the cost of a
// change on the hub no longer grows with the fleet (docs/benchmarks.md). upTo 0 lists
// every entry. It does not change in.
func Unlist(in appsv1alpha1.AppConditions, upTo int) appsv1alpha1.AppConditions {
	if upTo <= 0 || len(in.ClusterConditions) <= upTo {
		return in
	}
	out := in
	out.ClusterConditions = make([]appsv1alpha1.ClusterCondition, 0, len(in.ClusterConditions)/8)
	var unlisted int32
	for i := range in.ClusterConditions {
		if listed(&in.ClusterConditions[i]) {
			out.ClusterConditions = append(out.ClusterConditions, in.ClusterConditions[i])
			continue
		}
		unlisted++
	}
	if unlisted > 0 {
		t := appsv1alpha1.ReportTruncation{}
		if in.Truncation != nil {
			t = *in.Truncation
		}
		t.UnlistedClusterConditions = unlisted
		out.Truncation = &t
	}
	return out
}

// listed says whether a report of a large fleet lists e: unless it is a pulled
// Application its cluster's agent reported (so its ApplicationStatusReport holds the
// detail), is not stale, and needs no attention: Healthy, Synced, agent available, no
// conditions (warnings included), failing resources or not-healthy children.
func listed(e *appsv1alpha1.ClusterCondition) bool {
	detailReachable := e.Delivery == appsv1alpha1.DeliveryPull && e.LastReportedAt != nil && !e.Stale
	return !detailReachable || attention(*e) != 0 ||
		len(e.Conditions) > 0 || len(e.FailingResources) > 0 || len(e.NotHealthyChildren) > 0
}
