// Package propagation wraps each marked hub Argo CD Application in an OCM ManifestWork
// in its target cluster's namespace, and keeps exactly one such ManifestWork per live
// marked Application: a changed target, a removed mark, a recreated or deleted
// Application leaves no stale work behind. Bad input never takes down what runs: an
// Application that cannot be delivered as it is now keeps the ManifestWork delivered
// before, and says why in a condition and an Event.
package propagation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appwrite"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "argocd-pull-propagation"

// EventSource is the source (reportingController) of the Events it records.
const EventSource = "argocd-pull-propagation"

// maxConcurrentReconciles: a reconcile mostly waits for one ManifestWork write, so
// workers are cheap until the API server is the bound; the burst benchmark found where it
// is (docs/benchmarks.md, "What runs", the propagation phase).
const maxConcurrentReconciles = 32

// reconciler reconciles one hub Application (by namespace/name) into at most one
// ManifestWork.
type reconciler struct {
	// client reads from the manager's cache and writes to the API server.
	client client.Client
	// apiReader reads from the API server directly, to re-read after a conflict.
	apiReader client.Reader
	// cache reads hub Applications as stored (unstructured), which client would read from
	// the API server instead.
	cache    client.Reader
	recorder record.EventRecorder
	now      func() metav1.Time
	// requests runs the hub's side of the run-once request protocol.
	requests *requests.Hub
	// arrivals times the Application changes until a ManifestWork write carries them.
	arrivals latency.Arrivals
	// tenancy checks who may deliver where; nil when no check is enforced.
	tenancy *tenancy.Checker
}

var _ reconcile.Reconciler = &reconciler{}

// Options configure the propagation controller.
type Options struct {
	// Tenancy says who may deliver where.
	Tenancy tenancy.Options
}

// DefaultOptions are the propagation controller's defaults.
func DefaultOptions() Options { return Options{Tenancy: tenancy.DefaultOptions()} }

// Setup registers the controller with mgr, configured by o. The shared pull-model
// indexes (pullmodel.SetupIndexes) must be registered on mgr first.
func Setup(mgr ctrl.Manager, o Options) error {
	t, err := tenancy.New(mgr, o.Tenancy)
	if err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), cache: mgr.GetCache(),
		recorder: mgr.GetEventRecorderFor(EventSource), now: metav1.Now,
		requests: requests.NewHub(requests.ComparisonGrace), tenancy: t}
	return r.setupWithManager(mgr)
}

// Reconcile brings the ManifestWorks of the hub Application req names to the desired
// state: one up-to-date ManifestWork when the Application is live, marked and valid; none
// once it is deleted or unmarked. A ManifestWork goes only then, once a replacement exists
// (a valid retarget, a recreated Application), or with its cluster. When the Application
// cannot be delivered as it is now (a problem), what was delivered stays untouched and
// the problem is reported on the Application; fixing it resumes delivery.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	started := r.arrivals.Started(req.NamespacedName)
	written, err := r.reconcile(ctx, req)
	switch {
	case err != nil:
		// The changes wait for the retry.
	case written:
		if waited, ok := r.arrivals.Written(req.NamespacedName, started); ok {
			propagationLatency.Observe(waited.Seconds())
		}
	default:
		r.arrivals.Settled(req.NamespacedName, started)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	// A delivered operation waiting for its comparison goes at the end of the grace even
	// if nothing else changes.
	return ctrl.Result{RequeueAfter: r.requests.Requeue(req.NamespacedName, r.now().Time)}, nil
}

// reconcile is Reconcile's work; written tells whether it created or updated the
// Application's ManifestWork. It reads as the delivery: get the Application, settle its
// requests, check its input, check tenancy, build the ManifestWork, apply it, delete the
// stale ones, report the conditions.
func (r *reconciler) reconcile(ctx context.Context, req ctrl.Request) (written bool, err error) {
	works, err := pullmodel.WorksOf(ctx, r.client, req.NamespacedName)
	if err != nil {
		return false, err
	}
	in, err := r.getApplication(ctx, req.NamespacedName)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("getting Application %s: %w", req.NamespacedName, err)
		}
		// Gone: nothing may stay behind.
		r.requests.Forget(req.NamespacedName)
		r.arrivals.Forget(req.NamespacedName)
		return false, r.deleteWorks(ctx, works, nil)
	}
	if !in.typed.DeletionTimestamp.IsZero() {
		return false, r.reconcileDelete(ctx, in.typed, works)
	}

	if err := r.settleRequests(ctx, in, works); err != nil {
		return false, err
	}
	app := in.typed

	pulled, target, p, err := checkInput(ctx, app, r.managedCluster)
	if err != nil {
		return false, err
	}
	if !pulled {
		// The controller's logger already names the Application.
		ctrl.LoggerFrom(ctx).V(4).Info("Application is not marked for the pull model")
		if err := r.deleteWorks(ctx, works, nil); err != nil {
			return false, err
		}
		// Clears what this controller said while the Application was pulled, if anything.
		return false, r.report(ctx, app, nil)
	}
	if p != nil {
		return false, r.hold(ctx, app, works, p)
	}
	if p, err := asProblem(r.tenancy.Check(ctx, app, target)); err != nil || p != nil {
		if err != nil {
			return false, err
		}
		return false, r.hold(ctx, app, works, p)
	}

	desired, err := BuildManifestWork(in.stored, in.requests)
	if err != nil {
		return false, err
	}
	if p := checkSize(desired); p != nil {
		return false, r.hold(ctx, app, works, p)
	}
	written, err = r.apply(ctx, desired)
	if err != nil {
		// A refusal is not retried on a timer: the same write would be refused again.
		if p := refusal(desired, err); p != nil {
			return false, r.hold(ctx, app, works, p)
		}
		return false, err
	}
	// Only now that desired exists may the works it replaces go: OCM's work agent keeps a
	// resource two works share, so the spoke Application is never without one.
	if err := r.deleteWorks(ctx, works, desired); err != nil {
		return written, err
	}
	return written, r.report(ctx, app, nil)
}

// reconcileDelete deletes app's ManifestWorks and, once none is left, releases Argo CD's
// resources finalizer, which the hub Argo CD never removes from an Application it skips.
func (r *reconciler) reconcileDelete(ctx context.Context, app *argov1alpha1.Application, works []workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx)
	if len(works) > 0 {
		// The ManifestWork watch brings us back once they are gone.
		log.V(2).Info("Application is being deleted, deleting its ManifestWorks", "count", len(works))
		return r.deleteWorks(ctx, works, nil)
	}
	if !pullmodel.HoldsResourcesFinalizer(app) {
		return nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(app, pullmodel.ResourcesFinalizer)
	if err := r.client.Patch(ctx, app, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing finalizer %s from Application %s: %w", pullmodel.ResourcesFinalizer, klog.KObj(app), err)
	}
	log.V(2).Info("Removed the resources finalizer: no ManifestWork left", "finalizer", pullmodel.ResourcesFinalizer)
	return nil
}

// managedCluster is the ManagedCluster name, nil when it does not exist.
func (r *reconciler) managedCluster(ctx context.Context, name string) (*clusterv1.ManagedCluster, error) {
	cluster := &clusterv1.ManagedCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting ManagedCluster %s: %w", name, err)
	}
	return cluster, nil
}

// hold keeps app's ManifestWorks as they are while p stands, except one in the namespace
// of a cluster being deleted, which goes with its cluster, and reports p on app.
func (r *reconciler) hold(ctx context.Context, app *argov1alpha1.Application, works []workv1.ManifestWork, p *problem) error {
	var kept []workv1.ManifestWork
	var errs []error
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		cluster, err := r.managedCluster(ctx, w.Namespace)
		switch {
		case err != nil:
			errs = append(errs, err)
		case cluster != nil && !cluster.DeletionTimestamp.IsZero():
			errs = append(errs, r.deleteWork(ctx, w))
		default:
			kept = append(kept, *w)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Not delivering the Application as it is now", "reason", p.reason, "kept", len(kept))
	held := *p
	held.message = heldMessage(p, kept)
	return r.report(ctx, app, &held)
}

// report makes app's propagation conditions say p (nothing when p is nil), writing only
// when that changes them (appwrite.PatchApplication), and records p as a Warning Event
// when its condition is new.
func (r *reconciler) report(ctx context.Context, cached *argov1alpha1.Application, p *problem) error {
	log := ctrl.LoggerFrom(ctx)
	var want []argov1alpha1.ApplicationCondition
	if p != nil {
		want = []argov1alpha1.ApplicationCondition{pullmodel.HubCondition(p.condition, p.message)}
	}
	before, written, err := appwrite.PatchApplication(ctx, r.client, r.apiReader, nil, cached, func(app *argov1alpha1.Application) bool {
		var changed bool
		app.Status.Conditions, changed = pullmodel.SetHubConditions(app.Status.Conditions, pullmodel.PropagationConditionTypes, want, r.now())
		return changed
	})
	if err != nil {
		return fmt.Errorf("writing the conditions of Application %s: %w", klog.KObj(cached), err)
	}
	if written == nil {
		return nil
	}
	if p == nil {
		log.V(2).Info("Cleared the Application's propagation conditions")
		return nil
	}
	log.V(2).Info("Not delivering the Application as it is now", "condition", p.condition, "reason", p.reason, "message", p.message)
	if !slices.ContainsFunc(before.Status.Conditions, func(c argov1alpha1.ApplicationCondition) bool {
		return c.Type == want[0].Type && c.Message == want[0].Message
	}) {
		r.recorder.Event(cached, corev1.EventTypeWarning, p.reason, p.message)
	}
	return nil
}

// deleteWorks deletes every work in works that is not keep (nil: all of them).
func (r *reconciler) deleteWorks(ctx context.Context, works []workv1.ManifestWork, keep *workv1.ManifestWork) error {
	var errs []error
	for i := range works {
		w := &works[i]
		if keep != nil && w.Namespace == keep.Namespace && w.Name == keep.Name {
			continue
		}
		errs = append(errs, r.deleteWork(ctx, w))
	}
	return errors.Join(errs...)
}

// deleteWork deletes w unless it is already being deleted.
func (r *reconciler) deleteWork(ctx context.Context, w *workv1.ManifestWork) error {
	if !w.DeletionTimestamp.IsZero() {
		return nil
	}
	// Preconditions: delete exactly the object we saw, never a newer one of the same name.
	err := r.client.Delete(ctx, w, client.Preconditions{UID: &w.UID})
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(2).Info("Deleted ManifestWork", "manifestWork", klog.KObj(w))
	case apierrors.IsNotFound(err):
	default:
		return fmt.Errorf("deleting ManifestWork %s: %w", klog.KObj(w), err)
	}
	return nil
}

// apply creates desired, or updates the existing ManifestWork of that name when it
// differs; written tells whether it did either.
func (r *reconciler) apply(ctx context.Context, desired *workv1.ManifestWork) (written bool, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues("manifestWork", klog.KObj(desired))
	existing := &workv1.ManifestWork{}
	err = r.client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, desired); err != nil {
			return false, fmt.Errorf("creating ManifestWork %s: %w", klog.KObj(desired), err)
		}
		log.V(2).Info("Created ManifestWork")
		return true, nil
	case err != nil:
		return false, fmt.Errorf("getting ManifestWork %s: %w", klog.KObj(desired), err)
	}
	if workUpToDate(existing, desired) {
		log.V(4).Info("ManifestWork is up to date")
		return false, nil
	}
	updated := existing.DeepCopy()
	updated.Labels = mergeInto(updated.Labels, desired.Labels)
	updated.Annotations = mergeInto(updated.Annotations, desired.Annotations)
	updated.Spec.Workload = desired.Spec.Workload
	updated.Spec.ManifestConfigs = desired.Spec.ManifestConfigs
	updated.Spec.DeleteOption = desired.Spec.DeleteOption
	// The fetched resourceVersion makes a concurrent change a conflict, retried by requeue.
	if err := r.client.Update(ctx, updated); err != nil {
		return false, fmt.Errorf("updating ManifestWork %s: %w", klog.KObj(desired), err)
	}
	log.V(2).Info("Updated ManifestWork")
	return true, nil
}

func mergeInto(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}
