package appstatus

import (
	"context"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// reportHubApplicationIndex indexes ApplicationStatusReports by the "<namespace>/<name>"
// of the hub Application their source names.
const reportHubApplicationIndex = "appstatus.reportHubApplication"

// setupWithManager registers the report index and the watches: hub Applications that are
// pulled, and what maps to them, each filtered to the changes the status depends on.
func (r *reconciler) setupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &appsv1alpha1.ApplicationStatusReport{}, reportHubApplicationIndex, pullmodel.IndexSourceHubApplication); err != nil {
		return fmt.Errorf("indexing ApplicationStatusReports by hub Application: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&argov1alpha1.Application{}, builder.WithPredicates(pullmodel.MarkedPredicate(), applicationChanged())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(mapWorkToApplication),
			builder.WithPredicates(pullmodel.MarkedPredicate(), workChanged())).
		Watches(&appsv1alpha1.ApplicationStatusReport{}, handler.EnqueueRequestsFromMapFunc(pullmodel.MapSourceToHubApplication),
			builder.WithPredicates(pullmodel.ReportChangedPredicate())).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(r.mapAddonToApplications),
			builder.WithPredicates(predicate.Or(pullmodel.AgentAvailabilityPredicate(), watchedChanged()))).
		// Not a trigger: tells the tracker of the controller's own writes what the cache has.
		WatchesRawSource(source.Kind(mgr.GetCache(), &argov1alpha1.Application{}, r.written.EventHandler())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", ControllerName, err)
	}
	return nil
}

func mapWorkToApplication(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := pullmodel.HubApplication(obj)
	if !ok || !pullmodel.IsMarked(obj) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// mapAddonToApplications maps a cluster's agent addon to the hub Applications pulled to
// that cluster: those its ManifestWorks point to.
func (r *reconciler) mapAddonToApplications(ctx context.Context, obj client.Object) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.client.List(ctx, works, client.InNamespace(obj.GetNamespace())); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks of a cluster whose agent availability changed", "cluster", obj.GetNamespace())
		return nil
	}
	var requests []reconcile.Request
	for i := range works.Items {
		requests = append(requests, mapWorkToApplication(ctx, &works.Items[i])...)
	}
	return requests
}

// workChanged lets a ManifestWork update through only when the Application manifest's
// feedback, the hub annotations, the mark or what the delivery conditions read changed.
func workChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldMW, newMW *workv1.ManifestWork) bool {
		oldKey, _ := pullmodel.HubApplication(oldMW)
		newKey, _ := pullmodel.HubApplication(newMW)
		return oldKey != newKey || pullmodel.IsMarked(oldMW) != pullmodel.IsMarked(newMW) ||
			pullmodel.FeedbackChanged(oldMW, newMW) || deliveryChanged(oldMW, newMW)
	})
}

// deliveryChanged tells whether the delivery conditions (delivery.go) read something
// different from the two versions of a ManifestWork: the apply or availability failure,
// or when the work became Applied. The work agent rewrites its conditions' messages and
// times far more often than these change.
func deliveryChanged(oldMW, newMW *workv1.ManifestWork) bool {
	oldFailure, _ := clusterApplyError(oldMW.Namespace, oldMW)
	newFailure, _ := clusterApplyError(newMW.Namespace, newMW)
	if oldFailure != newFailure {
		return true
	}
	oldApplied := meta.FindStatusCondition(oldMW.Status.Conditions, workv1.WorkApplied)
	newApplied := meta.FindStatusCondition(newMW.Status.Conditions, workv1.WorkApplied)
	if (oldApplied == nil) != (newApplied == nil) {
		return true
	}
	return oldApplied != nil && (oldApplied.Status != newApplied.Status || !oldApplied.LastTransitionTime.Equal(&newApplied.LastTransitionTime))
}

// watchedChanged lets an argocd-pull ManagedClusterAddOn's update through when its
// agent's ApplicationsWatched condition changed, which a NotReportedError quotes.
func watchedChanged() predicate.Predicate {
	return predicate.And(
		predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == apps.AddonName }),
		pullmodel.UpdatesWhere(func(oldMCA, newMCA *addonv1alpha1.ManagedClusterAddOn) bool {
			oldCond := meta.FindStatusCondition(oldMCA.Status.Conditions, apps.ConditionApplicationsWatched)
			newCond := meta.FindStatusCondition(newMCA.Status.Conditions, apps.ConditionApplicationsWatched)
			if (oldCond == nil) != (newCond == nil) {
				return true
			}
			return oldCond != nil && (oldCond.Status != newCond.Status || oldCond.Message != newCond.Message)
		}),
	)
}

// applicationChanged lets an Application update through when what this controller depends on
// changed: its labels or annotations (target cluster), its sources (compared with what the
// cluster last compared, pullmodel.OutOfSyncUntilCompared), or a mirrored status field that
// someone else overwrote.
func applicationChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldApp, newApp *argov1alpha1.Application) bool {
		return !equality.Semantic.DeepEqual(oldApp.Labels, newApp.Labels) ||
			!equality.Semantic.DeepEqual(oldApp.Annotations, newApp.Annotations) ||
			!equality.Semantic.DeepEqual(oldApp.Spec.Source, newApp.Spec.Source) ||
			!equality.Semantic.DeepEqual(oldApp.Spec.Sources, newApp.Spec.Sources) ||
			oldApp.Status.Health.Status != newApp.Status.Health.Status ||
			oldApp.Status.Sync.Status != newApp.Status.Sync.Status ||
			oldApp.Status.Sync.Revision != newApp.Status.Sync.Revision ||
			oldApp.Status.Health.Message != newApp.Status.Health.Message ||
			!equality.Semantic.DeepEqual(oldApp.Status.Resources, newApp.Status.Resources) ||
			!equality.Semantic.DeepEqual(oldApp.Status.Conditions, newApp.Status.Conditions) ||
			!equality.Semantic.DeepEqual(mirroredOperation(oldApp), mirroredOperation(newApp))
	})
}

func mirroredOperation(app *argov1alpha1.Application) *argov1alpha1.OperationState {
	if app.Status.OperationState == nil {
		return nil
	}
	op := app.Status.OperationState
	return &argov1alpha1.OperationState{Phase: op.Phase, StartedAt: op.StartedAt, Message: op.Message, FinishedAt: op.FinishedAt}
}
