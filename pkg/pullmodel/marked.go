package pullmodel

import (
	"fmt"
	"strconv"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Marked reports whether obj (a hub Application, or the ManifestWork built for one) asks
// to be pulled: its apps.LabelPullToOCMManagedCluster label parses as true. A missing
// label is not marked; a value that is not a boolean is an error, which the propagation
// controller reports on the Application.
func Marked(obj metav1.Object) (bool, error) {
	v, ok := obj.GetLabels()[apps.LabelPullToOCMManagedCluster]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("label %s=%q is not a boolean: set it to \"true\" to pull the Application to a managed cluster, or remove it", apps.LabelPullToOCMManagedCluster, v)
	}
	return b, nil
}

// IsMarked is Marked for readers: an invalid label is not marked.
func IsMarked(obj metav1.Object) bool {
	marked, err := Marked(obj)
	return err == nil && marked
}

// hasPullLabel tells whether obj carries the pull label, whatever its value.
func hasPullLabel(obj client.Object) bool {
	if obj == nil {
		return false
	}
	_, ok := obj.GetLabels()[apps.LabelPullToOCMManagedCluster]
	return ok
}

// MarkedPredicate keeps events of marked objects (on an update, the new object): the
// filter of controllers that only read pulled Applications and their ManifestWorks.
func MarkedPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool { return IsMarked(obj) })
}

// PullLabelPredicate keeps events of objects carrying the pull label with any value,
// before or after an update: the filter of the controller that delivers and removes
// ManifestWorks, which must see an Application being unmarked (label removed or false)
// and one whose label is invalid.
func PullLabelPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return hasPullLabel(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return hasPullLabel(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return hasPullLabel(e.ObjectOld) || hasPullLabel(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return hasPullLabel(e.Object) },
	}
}
