package resourcetree

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// treeHubApplicationIndex indexes ApplicationResourceTrees by the "<namespace>/<name>" of
// the hub Application their source names.
const treeHubApplicationIndex = "resourcetree.hubApplication"

// maxConcurrentReconciles: a reconcile waits on Redis at most argocdredis.RequestTimeout;
// two keep one slow write from holding up every other tree.
const maxConcurrentReconciles = 2

// setupWithManager registers the tree index and the watches. Every event maps to the one
// hub Application it concerns: a tree to the Application its source names (on an update,
// the old one's too), an Application to itself when its pull mark or target cluster
// changes, or it goes.
func (r *reconciler) setupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &appsv1alpha1.ApplicationResourceTree{}, treeHubApplicationIndex, pullmodel.IndexSourceHubApplication); err != nil {
		return fmt.Errorf("indexing ApplicationResourceTrees by hub Application: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&argov1alpha1.Application{}, builder.WithPredicates(pullmodel.PullLabelPredicate(), pullingChanged())).
		Watches(&appsv1alpha1.ApplicationResourceTree{}, handler.EnqueueRequestsFromMapFunc(pullmodel.MapSourceToHubApplication),
			builder.WithPredicates(treeChanged())).
		// After Redis restarted, the Applications whose trees it lost.
		WatchesRawSource(source.Channel(r.rewrite, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", ControllerName, err)
	}
	return nil
}

// pullingChanged lets a hub Application's update through when whether it is pulled, or
// where, changed: nothing else of it decides which tree it gets (its status updates,
// the most frequent, do not).
func pullingChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldApp, newApp *argov1alpha1.Application) bool {
		return pullmodel.IsMarked(oldApp) != pullmodel.IsMarked(newApp) ||
			pullmodel.TargetCluster(oldApp) != pullmodel.TargetCluster(newApp)
	})
}

// treeChanged lets a tree's update through when its tree (its digest) or its source
// changed: the agent writes only on change, so this mostly drops resyncs.
func treeChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldTree, newTree *appsv1alpha1.ApplicationResourceTree) bool {
		return oldTree.Tree.Digest != newTree.Tree.Digest || oldTree.Source != newTree.Source
	})
}
