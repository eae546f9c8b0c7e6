// Package aggregation rolls the state of an ApplicationSet's pulled Applications on every
// cluster into one MulticlusterApplicationSetReport, with the ApplicationSet's name and
// namespace. It is built from three sources: the ManifestWorks' status feedback (sync and
// health scalars, polled by the OCM work agent), the argocd-pull agents'
// ApplicationStatusReports (conditions, resources, messages) and the argocd-pull
// ManagedClusterAddOns (whether each cluster's agent is available).
//
// The report also covers the ApplicationSet's hub-rendered Applications (docs/cmp.md):
// ordinary hub Applications, owned by the ApplicationSet, whose Argo CD applies a
// ManifestWork rendered by the ocm-manifestwork plugin into the cluster's namespace. Their
// entries take sync and health from the hub Application (the hub's Argo CD computes them)
// and resources and failures from the ManifestWork's status (OCM's work agent writes it).
// An Application finds its ManifestWorks in its own status.resources; a ManifestWork finds
// its Application through a field index on those, and the ApplicationSet through the
// Application's owner reference.
//
// The controller is keyed by the ApplicationSet's namespace/name, even after the
// ApplicationSet is gone. Every source maps to that key through a field index or the
// object's own fields, so a change to one agent report recomputes only its ApplicationSet;
// the workqueue coalesces bursts into one reconcile, and the report is written only when
// the result differs from what is stored. There is no periodic rebuild.
package aggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "aggregation"

// applicationSetIndex indexes ManifestWorks and ApplicationStatusReports by the
// "<namespace>/<name>" of the ApplicationSet whose Application they belong to, and
// hub-rendered Applications by the ApplicationSet that owns them.
const applicationSetIndex = "aggregation.applicationSet"

// managedWorkIndex indexes hub-rendered Applications by the "<namespace>/<name>" of each
// ManifestWork their Argo CD manages, so a ManifestWork's change finds its Application.
const managedWorkIndex = "aggregation.managedWork"

// Reconciler keeps one MulticlusterApplicationSetReport per ApplicationSet with pulled
// Applications.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// MaxConcurrentReconciles is the number of ApplicationSets whose reports are built and
	// written in parallel; 1 when unset, as Setup leaves it. One worker lets the queue
	// coalesce the changes of an ApplicationSet while the others are written: with 10,
	// the scale benchmark wrote 1.35 instead of 1.09 reports per change and its status
	// fan-in at 300 clusters took 4m9s instead of 1m28s (docs/benchmarks.md), because each
	// extra write of a report of hundreds of KiB costs the API server more than the wait.
	MaxConcurrentReconciles int
	// Limits bound the report's size; DefaultLimits when zero.
	Limits Limits

	// written is the controller's own last update of each report, newer than the cache
	// for a moment after each write.
	written ownWrites
	// hubRenderedWorks reads the hub-rendered ManifestWorks: the controller's own cache,
	// see newHubRenderedCache. Nil leaves hub-rendered Applications out (unit tests of the
	// pull model).
	hubRenderedWorks client.Reader
}

// Setup registers the aggregation controller with mgr.
func Setup(mgr ctrl.Manager) error {
	return (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}

// SetupWithManager registers the field indexes and the controller with mgr. ApplicationSets
// are watched as metadata only: the controller needs their existence and UID, not their
// templates.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
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
	hubRendered, err := newHubRenderedCache(mgr)
	if err != nil {
		return err
	}
	r.hubRenderedWorks = hubRendered
	err = ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesMetadata(&argov1alpha1.ApplicationSet{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.Funcs{UpdateFunc: applicationSetDeleting})).
		// A report deleted by hand comes back; the controller's own writes cause no event.
		Watches(&appsv1alpha1.MulticlusterApplicationSetReport{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(onlyDeletes())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(mapWorkToApplicationSet),
			builder.WithPredicates(predicate.NewPredicateFuncs(isApplicationSetWork), workChanged())).
		Watches(&appsv1alpha1.ApplicationStatusReport{}, handler.EnqueueRequestsFromMapFunc(mapReportToApplicationSet),
			builder.WithPredicates(appstatus.ReportChanged())).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(r.mapAddonToApplicationSets),
			builder.WithPredicates(predicate.NewPredicateFuncs(appstatus.IsAgentAddon), appstatus.AgentAvailabilityChanged())).
		// Hub-rendered delivery: the hub Applications (the manager's cache holds them all
		// already) and their ManifestWorks (the controller's own cache).
		WatchesRawSource(source.Kind(mgr.GetCache(), &argov1alpha1.Application{},
			handler.TypedEnqueueRequestsFromMapFunc(mapApplicationToApplicationSets), hubRenderedApplicationChanged())).
		WatchesRawSource(source.Kind(hubRendered, &workv1.ManifestWork{},
			handler.TypedEnqueueRequestsFromMapFunc(r.mapHubRenderedWorkToApplicationSets), hubRenderedWorkChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the %s controller: %w", ControllerName, err)
	}
	return nil
}

// Reconcile brings the report of the ApplicationSet req in line with its sources.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	appSet := &metav1.PartialObjectMetadata{}
	appSet.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("ApplicationSet"))
	if err := r.Client.Get(ctx, req.NamespacedName, appSet); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting ApplicationSet %s: %w", req, err)
		}
		appSet = nil
	}
	current := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := r.Client.Get(ctx, req.NamespacedName, current); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting MulticlusterApplicationSetReport %s: %w", req, err)
		}
		current = nil
		r.written.forget(req.NamespacedName)
	}
	current = r.written.current(req.NamespacedName, current)
	if appSet == nil || !appSet.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteReport(ctx, current)
	}

	in, err := r.inputs(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(in.Works) == 0 && len(in.HubRendered) == 0 && current == nil {
		log.V(4).Info("ApplicationSet has no pulled or hub-rendered Applications; no report")
		return ctrl.Result{}, nil
	}
	limits := r.Limits
	if len(limits.Levels) == 0 {
		limits = DefaultLimits
	}
	desired := Desired(appSet, in, limits)
	if current == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating MulticlusterApplicationSetReport %s: %w", req, err)
		}
		log.V(2).Info("Created MulticlusterApplicationSetReport", "clusters", desired.Statuses.Summary.Clusters)
		return ctrl.Result{}, nil
	}
	updated := current.DeepCopy()
	if !mergeInto(updated, desired) {
		log.V(4).Info("MulticlusterApplicationSetReport is up to date")
		return ctrl.Result{}, nil
	}
	// The update carries the resourceVersion it was built on (the cache's, or the
	// controller's own last write while the cache lags it): on a conflict the reconcile
	// fails and runs again on the newer object, never overwriting it blindly.
	if err := r.Client.Update(ctx, updated); err != nil {
		r.written.forget(req.NamespacedName)
		return ctrl.Result{}, fmt.Errorf("updating MulticlusterApplicationSetReport %s: %w", req, err)
	}
	r.written.updated(req.NamespacedName, current.ResourceVersion, updated)
	s := updated.Statuses.Summary
	log.V(2).Info("Updated MulticlusterApplicationSetReport", "clusters", s.Clusters, "healthy", s.Healthy,
		"synced", s.Synced, "inProgress", s.InProgress)
	return ctrl.Result{}, nil
}

// inputs reads everything the ApplicationSet's report is built from, from the cache.
func (r *Reconciler) inputs(ctx context.Context, key types.NamespacedName) (Inputs, error) {
	in := Inputs{ApplicationSet: key, Agents: map[string]appstatus.AgentAvailability{}}
	// Build only reads its inputs, so the cached objects are listed without deep copies: a
	// report of thousands of clusters is rebuilt on every change of one of them.
	works := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, works, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ManifestWorks of ApplicationSet %s: %w", key, err)
	}
	// A ManifestWork being deleted is an Application leaving its cluster. The lists are
	// filtered in place: at a thousand clusters a second copy of every item per reconcile
	// was the controller's largest allocation.
	in.Works = slices.DeleteFunc(works.Items, func(w workv1.ManifestWork) bool { return !w.DeletionTimestamp.IsZero() })
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := r.Client.List(ctx, reports, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ApplicationStatusReports of ApplicationSet %s: %w", key, err)
	}
	in.Reports = slices.DeleteFunc(reports.Items, func(r appsv1alpha1.ApplicationStatusReport) bool { return !r.DeletionTimestamp.IsZero() })
	if err := r.hubRenderedInputs(ctx, key, &in); err != nil {
		return in, err
	}
	for i := range in.Works {
		cluster := in.Works[i].Namespace
		if _, ok := in.Agents[cluster]; ok {
			continue
		}
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: cluster, Name: apps.AddonName}, mca)
		switch {
		case apierrors.IsNotFound(err):
			in.Agents[cluster] = appstatus.AgentAvailabilityOf(nil)
		case err != nil:
			return in, fmt.Errorf("getting ManagedClusterAddOn %s/%s: %w", cluster, apps.AddonName, err)
		default:
			in.Agents[cluster] = appstatus.AgentAvailabilityOf(mca)
		}
	}
	return in, nil
}

// hubRenderedInputs adds to in the ApplicationSet's hub-rendered Applications with their
// ManifestWorks: the Applications it owns that manage a ManifestWork (field index on the
// manager's cache), each with those of its ManifestWorks that are hub-rendered and were
// rendered for it (the controller's own cache). Deleted or deleting ones are leaving.
func (r *Reconciler) hubRenderedInputs(ctx context.Context, key types.NamespacedName, in *Inputs) error {
	if r.hubRenderedWorks == nil {
		return nil
	}
	applications := &argov1alpha1.ApplicationList{}
	if err := r.Client.List(ctx, applications, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing hub-rendered Applications of ApplicationSet %s: %w", key, err)
	}
	for i := range applications.Items {
		app := &applications.Items[i]
		if !app.DeletionTimestamp.IsZero() {
			continue
		}
		for _, workKey := range managedWorks(app) {
			mw := &workv1.ManifestWork{}
			err := r.hubRenderedWorks.Get(ctx, workKey, mw)
			if apierrors.IsNotFound(err) {
				// Not hub-rendered (another kind of ManifestWork the Application deploys),
				// or not created yet: its creation brings the ApplicationSet back.
				continue
			}
			if err != nil {
				return fmt.Errorf("getting ManifestWork %s of Application %s: %w", workKey, klog.KObj(app), err)
			}
			if mw.DeletionTimestamp.IsZero() && renderedFor(mw, app) {
				in.HubRendered = append(in.HubRendered, HubRenderedApplication{Application: app, Work: mw})
			}
		}
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

// Desired is the report of the ApplicationSet appSet built from in: its name, namespace,
// label and owner reference, and its statuses within limits.
func Desired(appSet *metav1.PartialObjectMetadata, in Inputs, limits Limits) *appsv1alpha1.MulticlusterApplicationSetReport {
	return &appsv1alpha1.MulticlusterApplicationSetReport{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "MulticlusterApplicationSetReport"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      appSet.Name,
			Namespace: appSet.Namespace,
			Labels: map[string]string{
				appsv1alpha1.LabelHostingApplicationSet: apps.ApplicationSetLabelValue(appSet.Namespace + "/" + appSet.Name),
			},
			// Garbage collection deletes the report with its ApplicationSet; the controller
			// also does, for hubs where that is slow. Not a controller reference: the
			// ApplicationSet controller does not manage the report.
			OwnerReferences: []metav1.OwnerReference{ownerReference(appSet)},
		},
		Statuses: Build(in, limits),
	}
}

func ownerReference(appSet *metav1.PartialObjectMetadata) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "ApplicationSet",
		Name: appSet.Name, UID: appSet.UID,
	}
}

// mergeInto makes current carry desired's statuses, label and owner reference, keeping
// everything else of current (other labels, annotations, other owners), and reports
// whether that changed anything.
func mergeInto(current, desired *appsv1alpha1.MulticlusterApplicationSetReport) bool {
	changed := false
	if !equality.Semantic.DeepEqual(current.Statuses, desired.Statuses) {
		current.Statuses = desired.Statuses
		changed = true
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			if current.Labels == nil {
				current.Labels = map[string]string{}
			}
			current.Labels[k] = v
			changed = true
		}
	}
	want := desired.OwnerReferences[0]
	found := false
	for i, ref := range current.OwnerReferences {
		if ref.Kind == want.Kind && ref.APIVersion == want.APIVersion && ref.Name == want.Name {
			found = true
			if ref.UID != want.UID {
				current.OwnerReferences[i].UID = want.UID
				changed = true
			}
		}
	}
	if !found {
		current.OwnerReferences = append(current.OwnerReferences, want)
		changed = true
	}
	return changed
}

// deleteReport deletes the report of an ApplicationSet that is gone. The UID
// precondition keeps a report recreated meanwhile.
func (r *Reconciler) deleteReport(ctx context.Context, report *appsv1alpha1.MulticlusterApplicationSetReport) error {
	if report == nil || !report.DeletionTimestamp.IsZero() {
		return nil
	}
	err := r.Client.Delete(ctx, report, client.Preconditions{UID: &report.UID})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting MulticlusterApplicationSetReport %s: %w", klog.KObj(report), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleted the MulticlusterApplicationSetReport of a deleted ApplicationSet")
	return nil
}

// parseApplicationSet splits "<namespace>/<name>".
func parseApplicationSet(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
