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
	"time"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/ownwrites"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "aggregation"

// maxConcurrentReconciles: four workers. A rebuild takes the entries of the clusters that
// did not change from the memo (entryMemo), so most of a reconcile is its report write, a
// round trip to a busy API server; one worker serving ten ApplicationSets in turn left
// each waiting for nine such round trips: at a thousand clusters and 50 changes/s,
// freshness p50 1.3 s and p99 3.8 s with one worker, 0.5 s and 1.8 s with four (median of
// three, docs/benchmarks.md). Before the memo, four workers doubled the controller's CPU
// for no gain, each rebuild computing every entry. Report writes are paced by their size
// (writePacing): without that, four workers rewrote the large reports of a fleet being
// created four times as often, and propagation fell from 183 to 134 Applications/s.
const maxConcurrentReconciles = 4

// reconciler keeps one MulticlusterApplicationSetReport per ApplicationSet with pulled
// or hub-rendered Applications.
type reconciler struct {
	// client reads from the manager's cache and writes to the API server.
	client client.Client
	// limits bound the report's size.
	limits Limits
	// written is the controller's own last update of each report, newer than the cache
	// for a moment after each write: building on it spares the API server an update with
	// an outdated resourceVersion (a full decode of the report, then a conflict).
	written ownwrites.Tracker[*appsv1alpha1.MulticlusterApplicationSetReport]
	// entries are the pulled entries of each ApplicationSet's last rebuild (entryMemo).
	entries entryMemos
	// agents are the clusters' agent availabilities as the watch last saw them.
	agents agentAvailabilities
	// pacing spaces the report writes by their size.
	pacing writePacing
	// clock is the time; nil is the wall clock.
	clock func() time.Time
	// hubRenderedWorks reads the hub-rendered ManifestWorks: the controller's own cache,
	// see newHubRenderedCache.
	hubRenderedWorks client.Reader
	// reportArrivals times the agents' report changes until a report write carries them.
	reportArrivals latency.Arrivals
}

var _ reconcile.Reconciler = &reconciler{}

// Setup registers the controller with mgr, with its own cache of hub-rendered
// ManifestWorks.
func Setup(mgr ctrl.Manager) error {
	hubRendered, err := newHubRenderedCache(mgr)
	if err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), limits: DefaultLimits, hubRenderedWorks: hubRendered}
	return r.setupWithManager(mgr, hubRendered)
}

func (r *reconciler) now() time.Time {
	if r.clock == nil {
		return time.Now()
	}
	return r.clock()
}

// Reconcile brings the report of the ApplicationSet req in line with its sources.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	started := r.reportArrivals.Started(req.NamespacedName)
	result, wait, err := r.reconcile(ctx, req)
	if err != nil {
		// The changes wait for the retry.
		return ctrl.Result{}, err
	}
	if result != resultNone {
		reportWrites.WithLabelValues(result).Inc()
	}
	switch result {
	case resultCreated, resultUpdated:
		if waited, ok := r.reportArrivals.Written(req.NamespacedName, started); ok {
			reportFreshness.Observe(waited.Seconds())
		}
	case resultDeleted:
		r.reportArrivals.Forget(req.NamespacedName)
	case resultPaced:
		// The changes wait for the write after the pause.
		return ctrl.Result{RequeueAfter: wait}, nil
	default:
		r.reportArrivals.Settled(req.NamespacedName, started)
	}
	return ctrl.Result{}, nil
}

// reconcile is Reconcile's work; result says what it did with the report (resultNone
// when there is none and should be none), and with resultPaced, how long the write must
// still wait (writePacing).
func (r *reconciler) reconcile(ctx context.Context, req ctrl.Request) (result string, wait time.Duration, err error) {
	log := ctrl.LoggerFrom(ctx)

	appSet := &metav1.PartialObjectMetadata{}
	appSet.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("ApplicationSet"))
	if err := r.client.Get(ctx, req.NamespacedName, appSet); err != nil {
		if !apierrors.IsNotFound(err) {
			return resultNone, 0, fmt.Errorf("getting ApplicationSet %s: %w", req, err)
		}
		appSet = nil
	}
	current := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := r.client.Get(ctx, req.NamespacedName, current); err != nil {
		if !apierrors.IsNotFound(err) {
			return resultNone, 0, fmt.Errorf("getting MulticlusterApplicationSetReport %s: %w", req, err)
		}
		current = nil
		r.written.Forget(req.NamespacedName)
	}
	current = r.written.Current(current)
	if appSet == nil || !appSet.DeletionTimestamp.IsZero() {
		r.entries.forget(req.NamespacedName)
		result, err := r.deleteReport(ctx, current)
		return result, 0, err
	}

	if wait := r.pacing.wait(r.now()); wait > 0 {
		log.V(4).Info("Reports were written moments ago; the next write waits", "wait", wait)
		return resultPaced, wait, nil
	}
	in, err := r.inputs(ctx, req.NamespacedName)
	if err != nil {
		return resultNone, 0, err
	}
	if len(in.Works) == 0 && len(in.HubRendered) == 0 && len(in.Undelivered) == 0 && current == nil {
		log.V(4).Info("ApplicationSet has no pulled or hub-rendered Applications; no report")
		r.entries.forget(req.NamespacedName)
		return resultNone, 0, nil
	}
	statuses, memo := buildReusing(in, r.limits, r.entries.get(req.NamespacedName))
	r.entries.put(req.NamespacedName, memo)
	desired := desiredReport(appSet, statuses)
	if current == nil {
		// The client decodes the API server's answer into what it sends: a copy, so the
		// answer never lands in the memo's entries.
		desired = desired.DeepCopy()
		if err := r.client.Create(ctx, desired); err != nil {
			return resultNone, 0, fmt.Errorf("creating MulticlusterApplicationSetReport %s: %w", req, err)
		}
		r.pacing.wrote(r.now(), jsonSize(desired.Statuses))
		log.V(2).Info("Created MulticlusterApplicationSetReport", "clusters", desired.Statuses.Summary.Clusters)
		return resultCreated, 0, nil
	}
	updated := current.DeepCopy()
	if !mergeInto(updated, desired) {
		log.V(4).Info("MulticlusterApplicationSetReport is up to date")
		return resultSkipped, 0, nil
	}
	// The update carries the resourceVersion it was built on (the cache's, or the
	// controller's own last write while the cache lags it): on a conflict the reconcile
	// fails and runs again on the newer object, never overwriting it blindly.
	if err := r.client.Update(ctx, updated); err != nil {
		r.written.Forget(req.NamespacedName)
		return resultNone, 0, fmt.Errorf("updating MulticlusterApplicationSetReport %s: %w", req, err)
	}
	r.written.Wrote(current.ResourceVersion, updated)
	r.pacing.wrote(r.now(), jsonSize(updated.Statuses))
	s := updated.Statuses.Summary
	log.V(2).Info("Updated MulticlusterApplicationSetReport", "clusters", s.Clusters, "healthy", s.Healthy,
		"synced", s.Synced, "inProgress", s.InProgress)
	return resultUpdated, 0, nil
}

// inputs reads everything the ApplicationSet's report is built from, from the cache.
func (r *reconciler) inputs(ctx context.Context, key types.NamespacedName) (Inputs, error) {
	in := Inputs{ApplicationSet: key, Agents: map[string]pullmodel.AgentAvailability{}}
	// Build only reads its inputs, so the cached objects are listed without deep copies: a
	// report of thousands of clusters is rebuilt on every change of one of them.
	works := &workv1.ManifestWorkList{}
	if err := r.client.List(ctx, works, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ManifestWorks of ApplicationSet %s: %w", key, err)
	}
	// A ManifestWork being deleted is an Application leaving its cluster. The lists are
	// filtered in place: at a thousand clusters a second copy of every item per reconcile
	// was the controller's largest allocation.
	in.Works = slices.DeleteFunc(works.Items, func(w workv1.ManifestWork) bool { return !w.DeletionTimestamp.IsZero() })
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := r.client.List(ctx, reports, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing ApplicationStatusReports of ApplicationSet %s: %w", key, err)
	}
	in.Reports = slices.DeleteFunc(reports.Items, func(r appsv1alpha1.ApplicationStatusReport) bool { return !r.DeletionTimestamp.IsZero() })
	applications := &argov1alpha1.ApplicationList{}
	if err := r.client.List(ctx, applications, client.MatchingFields{applicationSetIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing Applications of ApplicationSet %s: %w", key, err)
	}
	in.HubConditions = hubConditionsOf(applications.Items)
	in.Undelivered = undelivered(applications.Items, in.Works, in.HubConditions)
	if err := r.hubRenderedInputs(ctx, applications.Items, &in); err != nil {
		return in, err
	}
	for i := range in.Works {
		cluster := in.Works[i].Namespace
		if _, ok := in.Agents[cluster]; ok {
			continue
		}
		agent, err := r.agents.get(ctx, r.client, cluster)
		if err != nil {
			return in, err
		}
		in.Agents[cluster] = agent
	}
	return in, nil
}

// hubConditionsOf are the hub conditions of the pulled ones among applications, by
// Application; those without any are left out.
func hubConditionsOf(applications []argov1alpha1.Application) map[types.NamespacedName][]argov1alpha1.ApplicationCondition {
	out := map[types.NamespacedName][]argov1alpha1.ApplicationCondition{}
	for i := range applications {
		app := &applications[i]
		if !pulled(app) {
			continue
		}
		if c := pullmodel.HubConditions(app.Status.Conditions); len(c) > 0 {
			out[client.ObjectKeyFromObject(app)] = c
		}
	}
	return out
}

// undelivered are those of applications with hub conditions and none of works.
func undelivered(applications []argov1alpha1.Application, works []workv1.ManifestWork,
	hubConditions map[types.NamespacedName][]argov1alpha1.ApplicationCondition) []UndeliveredApplication {
	if len(hubConditions) == 0 {
		return nil
	}
	delivered := make(map[types.NamespacedName]bool, len(works))
	for i := range works {
		if key, ok := pullmodel.HubApplication(&works[i]); ok {
			delivered[key] = true
		}
	}
	var out []UndeliveredApplication
	for i := range applications {
		app := &applications[i]
		key := client.ObjectKeyFromObject(app)
		conditions, ok := hubConditions[key]
		if !ok || delivered[key] || !app.DeletionTimestamp.IsZero() {
			continue
		}
		out = append(out, UndeliveredApplication{
			Name: app.Name, Cluster: pullmodel.TargetCluster(app), Work: pullmodel.WorkName(app), Conditions: conditions,
		})
	}
	return out
}

// hubRenderedInputs adds to in the ApplicationSet's hub-rendered Applications with their
// ManifestWorks: those of applications (the ApplicationSet's, from the field index on the
// manager's cache) that manage a ManifestWork, each with those of its ManifestWorks that
// are hub-rendered and were rendered for it (the controller's own cache). Deleted or
// deleting ones are leaving.
func (r *reconciler) hubRenderedInputs(ctx context.Context, applications []argov1alpha1.Application, in *Inputs) error {
	for i := range applications {
		app := &applications[i]
		if !app.DeletionTimestamp.IsZero() || !isHubRenderedApplication(app) {
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

// deleteReport deletes the report of an ApplicationSet that is gone (resultDeleted;
// resultNone when there is none). The UID precondition keeps a report recreated meanwhile.
func (r *reconciler) deleteReport(ctx context.Context, report *appsv1alpha1.MulticlusterApplicationSetReport) (string, error) {
	if report == nil || !report.DeletionTimestamp.IsZero() {
		return resultNone, nil
	}
	err := r.client.Delete(ctx, report, client.Preconditions{UID: &report.UID})
	if apierrors.IsNotFound(err) {
		return resultDeleted, nil
	}
	if err != nil {
		return resultNone, fmt.Errorf("deleting MulticlusterApplicationSetReport %s: %w", klog.KObj(report), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleted the MulticlusterApplicationSetReport of a deleted ApplicationSet")
	return resultDeleted, nil
}
