package gitopscluster

// How changes to related objects reach the GitOpsClusters they affect, and only those.

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// byIndex lists the GitOpsClusters whose field index holds value.
func (r *Reconciler) byIndex(ctx context.Context, index, value string) []reconcile.Request {
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
func (r *Reconciler) forPlacementDecision(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetLabels()[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return nil
	}
	return r.byIndex(ctx, IndexPlacement, o.GetNamespace()+"/"+placement)
}

// forPlacement: the GitOpsClusters referencing the Placement.
func (r *Reconciler) forPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	return r.byIndex(ctx, IndexPlacement, o.GetNamespace()+"/"+o.GetName())
}

// forArgoNamespace: the GitOpsClusters whose Argo CD namespace is the namespace.
func (r *Reconciler) forArgoNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.byIndex(ctx, IndexArgoNamespace, o.GetName())
}

// forArgoNamespaceOf: the GitOpsClusters of the Argo CD namespace an owned ConfigMap, Role
// or RoleBinding lives in.
func forArgoNamespaceOf[T client.Object](r *Reconciler) handler.TypedMapFunc[T, reconcile.Request] {
	return func(ctx context.Context, o T) []reconcile.Request {
		return r.byIndex(ctx, IndexArgoNamespace, o.GetNamespace())
	}
}

// forSecret: the GitOpsCluster that created the Secret.
func (r *Reconciler) forSecret(_ context.Context, s *corev1.Secret) []reconcile.Request {
	if req, ok := ownerRequest(s); ok {
		return []reconcile.Request{req}
	}
	return nil
}

// forManagedCluster: the GitOpsClusters with a cluster Secret for the cluster, so label
// changes reach the Secrets. A cluster without a Secret yet comes in through its decision.
func (r *Reconciler) forManagedCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list corev1.SecretList
	if err := r.owned.GetCache().List(ctx, &list, client.MatchingLabels{LabelClusterName: labelSafe(o.GetName())}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing cluster Secrets of ManagedCluster", "cluster", o.GetName())
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var reqs []reconcile.Request
	for i := range list.Items {
		if req, ok := ownerRequest(&list.Items[i]); ok && !seen[req] {
			seen[req] = true
			reqs = append(reqs, req)
		}
	}
	return reqs
}

// ownerRequest is the request of the GitOpsCluster named by the Secret's owner annotation.
func ownerRequest(s *corev1.Secret) (reconcile.Request, bool) {
	ns, name, ok := strings.Cut(s.Annotations[AnnotationOwner], "/")
	if !ok || ns == "" || name == "" {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}, true
}
