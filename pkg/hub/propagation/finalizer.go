package propagation

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/pullmodel"
)

// HoldsResourcesFinalizer tells whether app is a hub Application whose Argo CD resources
// finalizer only this controller releases: it carries the finalizer and is pulled. The hub's
// Argo CD skips pulled Applications, so nothing else ever removes it. An invalid pull label
// still means pulled: its work was kept, so the finalizer is ours. `argocd-pull-addon
// release-finalizers` (the chart's uninstall hook) uses the same rule.
func HoldsResourcesFinalizer(app client.Object) bool {
	if marked, err := pullmodel.Marked(app); !marked && err == nil {
		return false
	}
	return controllerutil.ContainsFinalizer(app, ResourcesFinalizer)
}
