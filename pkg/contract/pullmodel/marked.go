package pullmodel

import (
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Marked reports whether obj (a hub Application, or the ManifestWork built for one) asks
// to be pulled. The apps.LabelPullToOCMManagedCluster label says it exactly: "true" is
// marked; "false" or no label is not marked, which makes the propagation controller delete
// what it delivered. Any other value ("True", "yes", "1", "") is an error, never an
// unmarking: taking an Application off its cluster must be said in so many words, so a
// typo in the label keeps what runs and is reported on the Application.
func Marked(obj metav1.Object) (bool, error) {
	v, ok := obj.GetLabels()[apps.LabelPullToOCMManagedCluster]
	switch {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, fmt.Errorf("label %s=%q is neither \"true\" nor \"false\": set it to \"true\" to keep pulling the Application to its managed cluster, or to \"false\" (or remove it) to delete it from there", apps.LabelPullToOCMManagedCluster, v)
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

// DeliveredFromHub says whether obj, an Application on a managed cluster, was delivered
// from the hub: the propagation controller puts the hub Application's namespace and name
// on every payload (BuildManifestWork). Applications the cluster's owners created there
// carry neither, and the agent neither reports them nor runs hub requests on them.
func DeliveredFromHub(obj metav1.Object) bool {
	a := obj.GetAnnotations()
	return a[apps.AnnotationHubApplicationNamespace] != "" && a[apps.AnnotationHubApplicationName] != ""
}
