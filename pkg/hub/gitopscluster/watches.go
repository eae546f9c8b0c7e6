package gitopscluster

// How changes to related objects reach the GitOpsClusters they affect, and only those.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// setupWithManager registers the field indexes and the watches. Only the GitOpsClusters
// an event concerns are reconciled; there is no periodic resync (only a GitOpsCluster with
// a conflicting Secret looks again after a few minutes).
func (r *reconciler) setupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &appsv1beta1.GitOpsCluster{}, IndexPlacement, func(o client.Object) []string {
		if gc, ok := o.(*appsv1beta1.GitOpsCluster); ok && placementKey(gc) != "" {
			return []string{placementKey(gc)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing GitOpsClusters by Placement: %w", err)
	}
	if err := idx.IndexField(ctx, &appsv1beta1.GitOpsCluster{}, IndexArgoNamespace, func(o client.Object) []string {
		if gc, ok := o.(*appsv1beta1.GitOpsCluster); ok && gc.Spec.ArgoServer.ArgoNamespace != "" {
			return []string{gc.Spec.ArgoServer.ArgoNamespace}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing GitOpsClusters by Argo CD namespace: %w", err)
	}

	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appsv1beta1.GitOpsCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.forPlacementDecision)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.forPlacement),
			builder.WithPredicates(createOrDelete())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.forManagedCluster),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.forArgoNamespace),
			builder.WithPredicates(createOrDelete())).
		WatchesRawSource(source.Kind(r.owned.GetCache(), &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(r.forSecret))).
		WatchesRawSource(source.Kind(r.owned.GetCache(), &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(forArgoNamespaceOf[*corev1.ConfigMap](r)))).
		WatchesRawSource(source.Kind(r.owned.GetCache(), &rbacv1.Role{},
			handler.TypedEnqueueRequestsFromMapFunc(forArgoNamespaceOf[*rbacv1.Role](r)))).
		WatchesRawSource(source.Kind(r.owned.GetCache(), &rbacv1.RoleBinding{},
			handler.TypedEnqueueRequestsFromMapFunc(forArgoNamespaceOf[*rbacv1.RoleBinding](r)))).
		Complete(r)
}

// createOrDelete passes only creations and deletions: whether a Placement or a namespace
// exists is all the GitOpsCluster depends on.
func createOrDelete() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// byIndex lists the GitOpsClusters whose field index holds value.
func (r *reconciler) byIndex(ctx context.Context, index, value string) []reconcile.Request {
	var list appsv1beta1.GitOpsClusterList
	if err := r.client.List(ctx, &list, client.MatchingFields{index: value}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing GitOpsClusters by index", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// forPlacementDecision: the GitOpsClusters referencing the decision's Placement.
func (r *reconciler) forPlacementDecision(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetLabels()[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return nil
	}
	return r.byIndex(ctx, IndexPlacement, o.GetNamespace()+"/"+placement)
}

// forPlacement: the GitOpsClusters referencing the Placement.
func (r *reconciler) forPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	return r.byIndex(ctx, IndexPlacement, o.GetNamespace()+"/"+o.GetName())
}

// forArgoNamespace: the GitOpsClusters whose Argo CD namespace is the namespace.
func (r *reconciler) forArgoNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.byIndex(ctx, IndexArgoNamespace, o.GetName())
}

// forArgoNamespaceOf: the GitOpsClusters of the Argo CD namespace an owned ConfigMap, Role
// or RoleBinding lives in.
func forArgoNamespaceOf[T client.Object](r *reconciler) handler.TypedMapFunc[T, reconcile.Request] {
	return func(ctx context.Context, o T) []reconcile.Request {
		return r.byIndex(ctx, IndexArgoNamespace, o.GetNamespace())
	}
}

// forSecret: the GitOpsClusters that own the Secret.
func (r *reconciler) forSecret(_ context.Context, s *corev1.Secret) []reconcile.Request {
	var reqs []reconcile.Request
	for _, o := range ownersOf(s) {
		reqs = append(reqs, reconcile.Request{NamespacedName: o})
	}
	return reqs
}

// forManagedCluster: the GitOpsClusters owning a cluster Secret of the cluster, so label
// changes reach the Secrets. A cluster without a Secret yet comes in through its decision.
func (r *reconciler) forManagedCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list corev1.SecretList
	if err := r.owned.GetCache().List(ctx, &list, client.MatchingLabels{LabelClusterName: labelSafe(o.GetName())}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing cluster Secrets of ManagedCluster", "cluster", o.GetName())
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	for i := range list.Items {
		for _, owner := range ownersOf(&list.Items[i]) {
			if !seen[owner] {
				seen[owner] = true
				reqs = append(reqs, reconcile.Request{NamespacedName: owner})
			}
		}
	}
	return reqs
}
