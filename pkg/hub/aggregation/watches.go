package aggregation

import (
	"context"
	"fmt"
	"slices"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// applicationSetIndex indexes ManifestWorks and ApplicationStatusReports by the
// "<namespace>/<name>" of the ApplicationSet whose Application they belong to, and
// hub-rendered Applications by the ApplicationSet that owns them.
const applicationSetIndex = "aggregation.applicationSet"

// managedWorkIndex indexes hub-rendered Applications by the "<namespace>/<name>" of each
// ManifestWork their Argo CD manages, so a ManifestWork's change finds its Application.
const managedWorkIndex = "aggregation.managedWork"

// setupWithManager registers the field indexes and the watches, and r with its metrics
// (instrumented), which time the agent report changes reportArrivals records.
// ApplicationSets are watched as metadata only: the controller needs their existence and
// UID, not their templates. Every source maps to the ApplicationSet's key.
func (r *reconciler) setupWithManager(mgr ctrl.Manager, hubRendered cache.Cache, reportArrivals *latency.Arrivals) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &workv1.ManifestWork{}, applicationSetIndex, indexWorkApplicationSet); err != nil {
		return fmt.Errorf("indexing ManifestWorks by ApplicationSet: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1alpha1.ApplicationStatusReport{}, applicationSetIndex, indexReportApplicationSet); err != nil {
		return fmt.Errorf("indexing ApplicationStatusReports by ApplicationSet: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &argov1alpha1.Application{}, applicationSetIndex, indexApplicationApplicationSet); err != nil {
		return fmt.Errorf("indexing Applications by ApplicationSet: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &argov1alpha1.Application{}, managedWorkIndex, indexApplicationManagedWorks); err != nil {
		return fmt.Errorf("indexing Applications by managed ManifestWork: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesMetadata(&argov1alpha1.ApplicationSet{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.Funcs{UpdateFunc: applicationSetDeleting})).
		// A report deleted by hand comes back; the controller's own writes cause no event.
		Watches(&appsv1alpha1.MulticlusterApplicationSetReport{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(onlyDeletes())).
		// Not a trigger: tells the writer's tracker of its own writes what the cache has.
		WatchesRawSource(source.Kind(mgr.GetCache(), &appsv1alpha1.MulticlusterApplicationSetReport{}, r.reports.written.EventHandler())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(mapWorkToApplicationSet),
			builder.WithPredicates(predicate.NewPredicateFuncs(isApplicationSetWork), workChanged())).
		// Report changes are timed from here to the report write (reportFreshness).
		Watches(&appsv1alpha1.ApplicationStatusReport{}, handler.EnqueueRequestsFromMapFunc(reportArrivals.MapFunc(mapReportToApplicationSet)),
			builder.WithPredicates(pullmodel.ReportChangedPredicate())).
		Watches(&addonv1alpha1.ManagedClusterAddOn{},
			recordingAvailability(&r.agents, handler.EnqueueRequestsFromMapFunc(r.mapAddonToApplicationSets)),
			builder.WithPredicates(pullmodel.AgentAvailabilityPredicate())).
		// Hub-rendered delivery: the hub Applications (the manager's cache holds them all
		// already) and their ManifestWorks (the controller's own cache).
		WatchesRawSource(source.Kind(mgr.GetCache(), &argov1alpha1.Application{},
			handler.TypedEnqueueRequestsFromMapFunc(owningApplicationSets(isHubRenderedApplication)), hubRenderedApplicationChanged())).
		// Pulled delivery: what the hub says keeps a pulled Application from running.
		WatchesRawSource(source.Kind(mgr.GetCache(), &argov1alpha1.Application{},
			handler.TypedEnqueueRequestsFromMapFunc(owningApplicationSets(pulled)), hubConditionsChanged())).
		WatchesRawSource(source.Kind(hubRendered, &workv1.ManifestWork{},
			handler.TypedEnqueueRequestsFromMapFunc(r.mapHubRenderedWorkToApplicationSets), hubRenderedWorkChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(instrumented(r, reportArrivals))
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", ControllerName, err)
	}
	return nil
}

// newHubRenderedCache returns the controller's cache of hub-rendered ManifestWorks (label
// apps.LabelHubRendered=true), added to mgr. The manager's own cache selects the pull
// model's ManifestWorks by their label, and a label selector cannot select either of two
// labels; a second, equally trimmed cache keeps both selective, and keeps hub-rendered
// works away from the propagation and application status controllers, which must never
// adopt, delete or mirror them. Like the manager's cache it runs in every replica, so
// a newly elected leader starts warm.
func newHubRenderedCache(mgr ctrl.Manager) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&workv1.ManifestWork{}: {
				Label:     labels.SelectorFromSet(labels.Set{apps.LabelHubRendered: "true"}),
				Transform: trimHubRenderedWork,
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of hub-rendered ManifestWorks: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of hub-rendered ManifestWorks: %w", err)
	}
	return c, nil
}

// trimHubRenderedWork drops from a cached hub-rendered ManifestWork what the aggregation
// never reads: managed fields, and the manifests, up to 500 KiB per work, which the hub's
// Argo CD owns (the status names every applied object). The controller never writes these
// works, so the trimmed copy is never sent back.
func trimHubRenderedWork(obj any) (any, error) {
	mw, ok := obj.(*workv1.ManifestWork)
	if !ok {
		// A tombstone of a deletion: passed on as is.
		return obj, nil
	}
	mw.ManagedFields = nil
	mw.Spec.Workload.Manifests = nil
	return mw, nil
}

// isApplicationSetWork keeps ManifestWorks of pulled Applications that an ApplicationSet
// owns.
func isApplicationSetWork(obj client.Object) bool {
	_, ok := pullmodel.HostingApplicationSet(obj)
	return ok
}

func indexWorkApplicationSet(obj client.Object) []string {
	key, ok := pullmodel.HostingApplicationSet(obj)
	if !ok {
		return nil
	}
	return []string{key.String()}
}

func mapWorkToApplicationSet(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := pullmodel.HostingApplicationSet(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// workChanged lets a ManifestWork update through when what the report reads changed: the
// annotations (hub Application, ApplicationSet), the pull label, deletion starting, or the
// Application manifest's feedback. The work agent rewrites conditions far more often.
func workChanged() predicate.Funcs {
	return pullmodel.UpdatesWhere(func(oldMW, newMW *workv1.ManifestWork) bool {
		return !equality.Semantic.DeepEqual(oldMW.Annotations, newMW.Annotations) ||
			pullmodel.IsMarked(oldMW) != pullmodel.IsMarked(newMW) ||
			oldMW.DeletionTimestamp.IsZero() != newMW.DeletionTimestamp.IsZero() ||
			pullmodel.FeedbackChanged(oldMW, newMW)
	})
}

// reportApplicationSet is the ApplicationSet an agent report names in its typed source
// (the label value may be a hash, so it is not parsed).
func reportApplicationSet(obj client.Object) (types.NamespacedName, bool) {
	rep, ok := obj.(*appsv1alpha1.ApplicationStatusReport)
	if !ok || rep.Source.ApplicationSet == "" {
		return types.NamespacedName{}, false
	}
	return pullmodel.ParseApplicationSet(rep.Source.ApplicationSet)
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
func (r *reconciler) mapAddonToApplicationSets(ctx context.Context, obj client.Object) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.client.List(ctx, works, client.InNamespace(obj.GetNamespace())); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks of a cluster whose agent availability changed", "cluster", obj.GetNamespace())
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var requests []reconcile.Request
	for i := range works.Items {
		key, ok := pullmodel.HostingApplicationSet(&works.Items[i])
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

// indexApplicationApplicationSet indexes a hub-rendered or pulled Application by the
// ApplicationSets that own it. A pulled Application's entry is its ManifestWork's; the
// Application adds its hub conditions.
func indexApplicationApplicationSet(obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok || (!isHubRenderedApplication(app) && !pulled(app)) {
		return nil
	}
	var keys []string
	for _, key := range pullmodel.OwningApplicationSets(app) {
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

// owningApplicationSets maps an Application that keep lets through to the
// ApplicationSets that own it: hub-rendered ones (on an update the handler maps the old
// object too, so an Application that stops being hub-rendered, or changes owner, leaves
// its old report) and pulled ones.
func owningApplicationSets(keep func(*argov1alpha1.Application) bool) handler.TypedMapFunc[*argov1alpha1.Application, reconcile.Request] {
	return func(_ context.Context, app *argov1alpha1.Application) []reconcile.Request {
		if !keep(app) {
			return nil
		}
		var requests []reconcile.Request
		for _, key := range pullmodel.OwningApplicationSets(app) {
			requests = append(requests, reconcile.Request{NamespacedName: key})
		}
		return requests
	}
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

// hubConditionsChanged lets a pulled Application's update through when its hub
// conditions (type and message) changed; its creation and deletion when it has any (a
// restart; an Application refused from the start has an entry of its own).
// Everything else of a pulled Application reaches the report through its ManifestWork and
// its agent's report.
func hubConditionsChanged() predicate.TypedFuncs[*argov1alpha1.Application] {
	hasHubConditions := func(app *argov1alpha1.Application) bool {
		return pulled(app) && len(pullmodel.HubConditions(app.Status.Conditions)) > 0
	}
	return predicate.TypedFuncs[*argov1alpha1.Application]{
		CreateFunc: func(e event.TypedCreateEvent[*argov1alpha1.Application]) bool { return hasHubConditions(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*argov1alpha1.Application]) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil || (!pulled(e.ObjectOld) && !pulled(e.ObjectNew)) {
				return false
			}
			return !slices.EqualFunc(pullmodel.HubConditions(e.ObjectOld.Status.Conditions), pullmodel.HubConditions(e.ObjectNew.Status.Conditions),
				func(a, b argov1alpha1.ApplicationCondition) bool { return a.Type == b.Type && a.Message == b.Message })
		},
		DeleteFunc:  func(e event.TypedDeleteEvent[*argov1alpha1.Application]) bool { return hasHubConditions(e.Object) },
		GenericFunc: func(event.TypedGenericEvent[*argov1alpha1.Application]) bool { return false },
	}
}

// pulled tells whether app is a pulled Application for the report: marked, or refused
// by the hub (its pull label invalid, say) and saying why in hub conditions.
func pulled(app *argov1alpha1.Application) bool {
	return pullmodel.IsMarked(app) || len(pullmodel.HubConditions(app.Status.Conditions)) > 0
}

// mapHubRenderedWorkToApplicationSets maps a hub-rendered ManifestWork to the
// ApplicationSets of the Applications that manage it (normally one).
func (r *reconciler) mapHubRenderedWorkToApplicationSets(ctx context.Context, mw *workv1.ManifestWork) []reconcile.Request {
	applications := &argov1alpha1.ApplicationList{}
	if err := r.client.List(ctx, applications, client.MatchingFields{managedWorkIndex: client.ObjectKeyFromObject(mw).String()}); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of a hub-rendered ManifestWork", "manifestWork", klog.KObj(mw))
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var requests []reconcile.Request
	for i := range applications.Items {
		for _, key := range pullmodel.OwningApplicationSets(&applications.Items[i]) {
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
