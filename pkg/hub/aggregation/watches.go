package aggregation

import (
	"context"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// workApplicationSet is the ApplicationSet of a pulled ManifestWork, from its
// hosting-applicationset annotation.
func workApplicationSet(obj client.Object) (types.NamespacedName, bool) {
	if !isApplicationSetWork(obj) {
		return types.NamespacedName{}, false
	}
	return parseApplicationSet(obj.GetAnnotations()[apps.AnnotationHostingApplicationSet])
}

// isApplicationSetWork keeps ManifestWorks of pulled Applications that an ApplicationSet
// owns.
func isApplicationSetWork(obj client.Object) bool {
	return obj.GetLabels()[apps.LabelPullToOCMManagedCluster] == "true" &&
		obj.GetAnnotations()[apps.AnnotationHostingApplicationSet] != ""
}

func indexWorkApplicationSet(obj client.Object) []string {
	key, ok := workApplicationSet(obj)
	if !ok {
		return nil
	}
	return []string{key.String()}
}

func mapWorkToApplicationSet(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := workApplicationSet(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// workChanged lets a ManifestWork update through when what the report reads changed: the
// annotations (hub Application, ApplicationSet), the pull label, deletion starting, or the
// Application manifest's feedback. The work agent rewrites conditions far more often.
func workChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldMW, ok := e.ObjectOld.(*workv1.ManifestWork)
			if !ok {
				return false
			}
			newMW, ok := e.ObjectNew.(*workv1.ManifestWork)
			if !ok {
				return false
			}
			if !equality.Semantic.DeepEqual(oldMW.Annotations, newMW.Annotations) ||
				oldMW.Labels[apps.LabelPullToOCMManagedCluster] != newMW.Labels[apps.LabelPullToOCMManagedCluster] ||
				oldMW.DeletionTimestamp.IsZero() != newMW.DeletionTimestamp.IsZero() {
				return true
			}
			oldValues, _ := appstatus.ApplicationFeedback(oldMW)
			newValues, _ := appstatus.ApplicationFeedback(newMW)
			return !equality.Semantic.DeepEqual(oldValues, newValues)
		},
	}
}

// reportApplicationSet is the ApplicationSet an agent report names in its typed source
// (the label value may be a hash, so it is not parsed).
func reportApplicationSet(obj client.Object) (types.NamespacedName, bool) {
	rep, ok := obj.(*appsv1alpha1.ApplicationStatusReport)
	if !ok || rep.Source.ApplicationSet == "" {
		return types.NamespacedName{}, false
	}
	return parseApplicationSet(rep.Source.ApplicationSet)
}

func indexReportApplicationSet(obj client.Object) []string {
	key, ok := reportApplicationSet(obj)
	if !ok {
		return nil
	}
	return []string{key.String()}
}

func mapReportToApplicationSet(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := reportApplicationSet(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// mapAddonToApplicationSets maps a cluster's agent addon to the ApplicationSets with
// ManifestWorks in that cluster's namespace (the cache's namespace index).
func (r *Reconciler) mapAddonToApplicationSets(ctx context.Context, obj client.Object) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(obj.GetNamespace())); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks of a cluster whose agent availability changed", "cluster", obj.GetNamespace())
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var requests []reconcile.Request
	for i := range works.Items {
		key, ok := workApplicationSet(&works.Items[i])
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		requests = append(requests, reconcile.Request{NamespacedName: key})
	}
	return requests
}

// applicationSetDeleting lets an ApplicationSet update through when its deletion starts.
func applicationSetDeleting(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// onlyDeletes keeps delete events.
func onlyDeletes() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// indexApplicationApplicationSet indexes a hub-rendered Application by the ApplicationSets
// that own it. Pulled Applications reach their ApplicationSet through their ManifestWork.
func indexApplicationApplicationSet(obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok || !isHubRenderedApplication(app) {
		return nil
	}
	var keys []string
	for _, key := range owningApplicationSets(app) {
		keys = append(keys, key.String())
	}
	return keys
}

// indexApplicationManagedWorks indexes a hub-rendered Application by the ManifestWorks its
// Argo CD manages.
func indexApplicationManagedWorks(obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok || !isHubRenderedApplication(app) {
		return nil
	}
	var keys []string
	for _, key := range managedWorks(app) {
		keys = append(keys, key.String())
	}
	return keys
}

// mapApplicationToApplicationSets maps a hub-rendered Application to the ApplicationSets
// that own it. On an update the handler maps the old object too, so an Application that
// stops being hub-rendered, or changes owner, leaves its old report.
func mapApplicationToApplicationSets(_ context.Context, app *argov1alpha1.Application) []reconcile.Request {
	if !isHubRenderedApplication(app) {
		return nil
	}
	var requests []reconcile.Request
	for _, key := range owningApplicationSets(app) {
		requests = append(requests, reconcile.Request{NamespacedName: key})
	}
	return requests
}

// hubRenderedApplicationChanged lets an Application event through when it is hub-rendered
// (before or after an update) and what its entry reads changed. Argo CD rewrites every
// Application's status on each refresh; most of it is filtered out here.
func hubRenderedApplicationChanged() predicate.TypedFuncs[*argov1alpha1.Application] {
	return predicate.TypedFuncs[*argov1alpha1.Application]{
		CreateFunc: func(e event.TypedCreateEvent[*argov1alpha1.Application]) bool {
			return isHubRenderedApplication(e.Object)
		},
		DeleteFunc: func(e event.TypedDeleteEvent[*argov1alpha1.Application]) bool {
			return isHubRenderedApplication(e.Object)
		},
		UpdateFunc: func(e event.TypedUpdateEvent[*argov1alpha1.Application]) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			oldState, newState := applicationStateOf(e.ObjectOld), applicationStateOf(e.ObjectNew)
			if !oldState.Candidate && !newState.Candidate {
				return false
			}
			return !equality.Semantic.DeepEqual(oldState, newState)
		},
		GenericFunc: func(event.TypedGenericEvent[*argov1alpha1.Application]) bool { return false },
	}
}

// mapHubRenderedWorkToApplicationSets maps a hub-rendered ManifestWork to the
// ApplicationSets of the Applications that manage it (normally one).
func (r *Reconciler) mapHubRenderedWorkToApplicationSets(ctx context.Context, mw *workv1.ManifestWork) []reconcile.Request {
	applications := &argov1alpha1.ApplicationList{}
	if err := r.Client.List(ctx, applications, client.MatchingFields{managedWorkIndex: client.ObjectKeyFromObject(mw).String()}); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of a hub-rendered ManifestWork", "manifestWork", klog.KObj(mw))
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var requests []reconcile.Request
	for i := range applications.Items {
		for _, key := range owningApplicationSets(&applications.Items[i]) {
			if !seen[key] {
				seen[key] = true
				requests = append(requests, reconcile.Request{NamespacedName: key})
			}
		}
	}
	return requests
}

// hubRenderedWorkChanged lets a hub-rendered ManifestWork update through when what an
// entry reads from it changed (see hubRenderedWorkState).
func hubRenderedWorkChanged() predicate.TypedFuncs[*workv1.ManifestWork] {
	return predicate.TypedFuncs[*workv1.ManifestWork]{
		UpdateFunc: func(e event.TypedUpdateEvent[*workv1.ManifestWork]) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return !equality.Semantic.DeepEqual(workStateOf(e.ObjectOld), workStateOf(e.ObjectNew))
		},
		GenericFunc: func(event.TypedGenericEvent[*workv1.ManifestWork]) bool { return false },
	}
}
