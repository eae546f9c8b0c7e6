package propagation

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// appClusterIndex indexes Applications by their target cluster annotation.
const appClusterIndex = "propagation.targetCluster"

// setupWithManager registers the Application index and the watches: Applications carrying
// the pull label with any value (unmarking must reach Reconcile), their ManifestWorks, the
// ManagedClusters they target, and what the tenancy checks read. Applications are watched
// as stored (unstructured): the payload is built from them.
func (r *reconciler) setupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), newApplicationObject(), appClusterIndex, indexAppByCluster); err != nil {
		return fmt.Errorf("indexing Applications by target cluster: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// The arrivals predicate comes last: it times only the changes that reach Reconcile.
		For(newApplicationObject(), builder.WithPredicates(predicate.Or(pullmodel.PullLabelPredicate(), heldFinalizerPredicate()),
			storedApplicationChanged(), r.arrivals.Predicate())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workToApp),
			builder.WithPredicates(pullmodel.PullLabelPredicate(), workChanged())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToApps),
			builder.WithPredicates(predicate.Or(clusterTargetability(), r.tenancy.ClusterChanges()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	b, err := r.tenancy.Watch(mgr, b, appClusterIndex)
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// storedApplicationChanged passes the updates of a hub Application that change what this
// controller reads. Its cached copy holds exactly that (the manager's cache transform), so
// two versions that differ in nothing but their resourceVersion and generation differ in
// nothing it reads: the application status controller's mirror of every status change of
// the spoke is not propagation's business. The generation moves with that mirror too:
// Argo CD's Application CRD has no status subresource, so the API server counts a status
// write as a change of the object.
func storedApplicationChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldApp, newApp *unstructured.Unstructured) bool {
		return !equalExceptVersions(oldApp.Object, newApp.Object)
	})
}

// versionFields are the metadata fields the API server moves on every write, which
// propagation never reads.
var versionFields = []string{"resourceVersion", "generation"}

func equalExceptVersions(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		if k == "metadata" {
			am, aok := av.(map[string]any)
			bm, bok := bv.(map[string]any)
			if aok && bok {
				am, bm = maps.Clone(am), maps.Clone(bm)
				for _, f := range versionFields {
					delete(am, f)
					delete(bm, f)
				}
				av, bv = am, bm
			}
		}
		if !equality.Semantic.DeepEqual(av, bv) {
			return false
		}
	}
	return true
}

// workChanged passes the updates of a ManifestWork this controller acts on: the work itself
// (spec, labels, annotations, finalizers, owners, deletion) and the requests the spoke
// says it received (DeliveredFromFeedback). The work agent's other status updates, one
// per status change of the spoke Application, are not propagation's business.
func workChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldMW, newMW *workv1.ManifestWork) bool {
		if oldMW.Generation != newMW.Generation ||
			!equality.Semantic.DeepEqual(oldMW.Spec, newMW.Spec) ||
			!maps.Equal(oldMW.Labels, newMW.Labels) || !maps.Equal(oldMW.Annotations, newMW.Annotations) ||
			!slices.Equal(oldMW.Finalizers, newMW.Finalizers) ||
			!equality.Semantic.DeepEqual(oldMW.OwnerReferences, newMW.OwnerReferences) ||
			!oldMW.DeletionTimestamp.Equal(newMW.DeletionTimestamp) {
			return true
		}
		oldValues, _ := pullmodel.ApplicationFeedback(oldMW)
		newValues, _ := pullmodel.ApplicationFeedback(newMW)
		return pullmodel.DeliveredFromFeedback(oldValues) != pullmodel.DeliveredFromFeedback(newValues)
	})
}

func indexAppByCluster(obj client.Object) []string {
	if c := pullmodel.TargetCluster(obj); c != "" {
		return []string{c}
	}
	return nil
}

func workToApp(_ context.Context, obj client.Object) []reconcile.Request {
	if key, ok := pullmodel.HubApplication(obj); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

func (r *reconciler) clusterToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind(applicationGVK.Kind + "List"))
	if err := r.cache.List(ctx, list, client.MatchingFields{appClusterIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of a ManagedCluster", "managedCluster", klog.KObj(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// clusterTargetability passes ManagedCluster events that can change whether the cluster
// is a target: creation, deletion, deletion started, local-cluster label changed.
func clusterTargetability() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil) ||
				e.ObjectOld.GetLabels()[LabelLocalCluster] != e.ObjectNew.GetLabels()[LabelLocalCluster]
		},
	}
}

// heldFinalizerPredicate keeps the events of Applications whose resources finalizer this
// controller holds but which carry no pull label (unmarked by removing it), so that their
// deletion reaches the controller.
func heldFinalizerPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(pullmodel.HoldsResourcesFinalizer)
}
