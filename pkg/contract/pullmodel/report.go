package pullmodel

import (
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ReportChangedPredicate lets an agent report's update through when what it says changed
// (its source, its status, its deletion starting). The agent writes only on change, so
// this mostly drops resyncs.
func ReportChangedPredicate() predicate.Predicate {
	return UpdatesWhere(func(oldRep, newRep *appsv1alpha1.ApplicationStatusReport) bool {
		return oldRep.Source != newRep.Source || !equality.Semantic.DeepEqual(oldRep.Status, newRep.Status) ||
			oldRep.DeletionTimestamp.IsZero() != newRep.DeletionTimestamp.IsZero()
	})
}

// ReportSupersedes tells whether candidate speaks for an Application rather than current,
// two agent reports of the same Application on the same cluster (two spoke Applications
// claiming one hub Application): the most recently observed wins, then the first by name,
// so every reader picks the same one.
func ReportSupersedes(candidate, current *appsv1alpha1.ApplicationStatusReport) bool {
	if !candidate.Status.ObservedAt.Equal(&current.Status.ObservedAt) {
		return candidate.Status.ObservedAt.After(current.Status.ObservedAt.Time)
	}
	return candidate.Name < current.Name
}
