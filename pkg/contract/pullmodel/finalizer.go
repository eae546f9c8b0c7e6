package pullmodel

import (
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// ResourcesFinalizer is Argo CD's cascading-delete finalizer.
const ResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

// HoldsResourcesFinalizer tells whether app is a hub Application whose Argo CD resources
// finalizer only the propagation controller releases: it carries the finalizer, and the hub's Argo CD
// skips it. That is every pulled Application. An invalid pull label still means pulled:
// its work was kept, so the finalizer is ours. And it is an unmarked one that still has
// the pull model's skip-reconcile "true" and target cluster annotation: the hub's Argo CD
// skips it just the same, and what it deployed went with its ManifestWork when it was
// unmarked; without this its deletion would hang for ever. An unmarked Application
// without them (handed to the hub's Argo CD, or never pulled) is Argo CD's to finalize.
// `argocd-pull-addon release-finalizers` (the chart's uninstall hook) uses the same rule.
func HoldsResourcesFinalizer(app client.Object) bool {
	if !controllerutil.ContainsFinalizer(app, ResourcesFinalizer) {
		return false
	}
	if marked, err := Marked(app); marked || err != nil {
		return true
	}
	skip, err := strconv.ParseBool(app.GetAnnotations()[apps.AnnotationSkipReconcile])
	return err == nil && skip && TargetCluster(app) != ""
}
