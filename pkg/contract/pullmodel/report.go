package pullmodel

import (
	"context"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
	return supersedes(candidate.Status.ObservedAt, current.Status.ObservedAt, candidate.Name, current.Name)
}

// TreeSupersedes is ReportSupersedes for two ApplicationResourceTrees of the same
// Application on the same cluster: the hub serves the tree of the same spoke Application
// as the status it mirrors.
func TreeSupersedes(candidate, current *appsv1alpha1.ApplicationResourceTree) bool {
	return supersedes(candidate.Tree.ObservedAt, current.Tree.ObservedAt, candidate.Name, current.Name)
}

func supersedes(candidateObserved, currentObserved metav1.Time, candidateName, currentName string) bool {
	if !candidateObserved.Equal(&currentObserved) {
		return candidateObserved.After(currentObserved.Time)
	}
	return candidateName < currentName
}

// SourceHubApplication is the hub Application an agent's ApplicationStatusReport or
// ApplicationResourceTree names in its source; false for any other object, or a source
// that names none.
func SourceHubApplication(obj client.Object) (types.NamespacedName, bool) {
	var source appsv1alpha1.ApplicationReportSource
	switch o := obj.(type) {
	case *appsv1alpha1.ApplicationStatusReport:
		source = o.Source
	case *appsv1alpha1.ApplicationResourceTree:
		source = o.Source
	default:
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: source.HubApplicationNamespace, Name: source.HubApplicationName}
	return key, key.Namespace != "" && key.Name != ""
}

// IndexSourceHubApplication indexes reports and trees by the "<namespace>/<name>" of the
// hub Application their source names (SourceHubApplication).
func IndexSourceHubApplication(obj client.Object) []string {
	if key, ok := SourceHubApplication(obj); ok {
		return []string{key.String()}
	}
	return nil
}

// MapSourceToHubApplication maps a report or tree to the hub Application its source
// names.
func MapSourceToHubApplication(_ context.Context, obj client.Object) []reconcile.Request {
	if key, ok := SourceHubApplication(obj); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}
