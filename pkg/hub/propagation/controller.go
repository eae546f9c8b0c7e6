// Package propagation wraps each marked hub Argo CD Application in an OCM ManifestWork
// in its target cluster's namespace, and keeps exactly one such ManifestWork per live
// marked Application: a changed target, a removed mark, a recreated or deleted
// Application leaves no stale work behind.
package propagation

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller, its logger and its Event source.
const ControllerName = "argocd-pull-propagation"

// Event reasons on the hub Application.
const (
	ReasonInvalidPullLabel   = "InvalidPullLabel"
	ReasonInvalidApplication = "InvalidPullAnnotations"
	ReasonClusterNotFound    = "ManagedClusterNotFound"
	ReasonClusterDeleting    = "ManagedClusterDeleting"
	ReasonLocalCluster       = "LocalClusterNotATarget"
)

// maxConcurrentReconciles: a reconcile mostly waits for one ManifestWork write, and the
// burst benchmark (docs/benchmarks.md) found the API server CPU-bound at 32 workers.
const maxConcurrentReconciles = 32

// reconciler reconciles one hub Application (by namespace/name) into at most one
// ManifestWork.
type reconciler struct {
	client   client.Client
	recorder record.EventRecorder
}

var _ reconcile.Reconciler = &reconciler{}

// Setup registers the controller with mgr. The shared pull-model indexes
// (pullmodel.SetupIndexes) must be registered on mgr first.
func Setup(mgr ctrl.Manager) error {
	r := &reconciler{client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor(ControllerName)}
	return r.setupWithManager(mgr)
}

// Reconcile brings the ManifestWorks of the hub Application req names to the desired
// state: one up-to-date ManifestWork when the Application is live, marked and valid, none
// otherwise.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The controller's logger already names the Application.
	works, err := pullmodel.WorksOf(ctx, r.client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}

	app := &argov1alpha1.Application{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting Application %s: %w", req.NamespacedName, err)
		}
		// Gone: nothing may stay behind.
		return ctrl.Result{}, r.deleteWorks(ctx, works, nil)
	}

	if !app.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, app, works)
	}

	desired, err := r.desiredWork(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.deleteWorks(ctx, works, desired); err != nil {
		return ctrl.Result{}, err
	}
	if desired == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.apply(ctx, desired)
}

// reconcileDelete deletes app's ManifestWorks and, once none is left, releases Argo CD's
// resources finalizer, which the hub Argo CD never removes from an Application it skips.
func (r *reconciler) reconcileDelete(ctx context.Context, app *argov1alpha1.Application, works []workv1.ManifestWork) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if len(works) > 0 {
		// The ManifestWork watch brings us back once they are gone.
		log.V(2).Info("Application is being deleted, deleting its ManifestWorks", "count", len(works))
		return ctrl.Result{}, r.deleteWorks(ctx, works, nil)
	}
	if !pullmodel.IsMarked(app) || !controllerutil.ContainsFinalizer(app, ResourcesFinalizer) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(app, ResourcesFinalizer)
	if err := r.client.Patch(ctx, app, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("removing finalizer %s from Application %s: %w", ResourcesFinalizer, klog.KObj(app), err)
	}
	log.V(2).Info("Removed the resources finalizer: no ManifestWork left", "finalizer", ResourcesFinalizer)
	return ctrl.Result{}, nil
}

// desiredWork returns the ManifestWork app should have, or nil when it should have none.
// Bad input is reported as a Warning Event on app, not as an error: retrying cannot fix it.
func (r *reconciler) desiredWork(ctx context.Context, app *argov1alpha1.Application) (*workv1.ManifestWork, error) {
	log := ctrl.LoggerFrom(ctx)
	marked, err := pullmodel.Marked(app)
	if err != nil {
		r.warn(ctx, app, ReasonInvalidPullLabel, err.Error())
		return nil, nil
	}
	if !marked {
		log.V(4).Info("Application is not marked for the pull model")
		return nil, nil
	}
	if err := Validate(app); err != nil {
		r.warn(ctx, app, ReasonInvalidApplication, err.Error())
		return nil, nil
	}
	ok, err := r.targetable(ctx, app)
	if err != nil || !ok {
		return nil, err
	}
	desired, err := BuildManifestWork(app)
	if err != nil {
		return nil, err
	}
	return desired, nil
}

// targetable checks the target ManagedCluster exists, is not being deleted and is not
// the hub's local cluster.
func (r *reconciler) targetable(ctx context.Context, app *argov1alpha1.Application) (bool, error) {
	name := pullmodel.TargetCluster(app)
	cluster := &clusterv1.ManagedCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("getting ManagedCluster %s: %w", name, err)
		}
		r.warn(ctx, app, ReasonClusterNotFound, fmt.Sprintf(
			"ManagedCluster %q named by annotation %s does not exist: register the cluster or fix the annotation", name, apps.AnnotationOCMManagedCluster))
		return false, nil
	}
	if !cluster.DeletionTimestamp.IsZero() {
		r.warn(ctx, app, ReasonClusterDeleting, fmt.Sprintf(
			"ManagedCluster %q named by annotation %s is being deleted: target another cluster", name, apps.AnnotationOCMManagedCluster))
		return false, nil
	}
	if cluster.Labels[LabelLocalCluster] == "true" {
		r.warn(ctx, app, ReasonLocalCluster, fmt.Sprintf(
			"ManagedCluster %q is the hub itself (label %s=true) and is not a pull-model target: let the hub's Argo CD deploy it (remove label %s) or target another cluster", name, LabelLocalCluster, apps.LabelPullToOCMManagedCluster))
		return false, nil
	}
	return true, nil
}

func (r *reconciler) warn(ctx context.Context, app *argov1alpha1.Application, reason, msg string) {
	ctrl.LoggerFrom(ctx).V(2).Info("Not propagating the Application", "reason", reason, "message", msg)
	r.recorder.Event(app, corev1.EventTypeWarning, reason, msg)
}

// deleteWorks deletes every work in works that is not keep (nil: all of them).
func (r *reconciler) deleteWorks(ctx context.Context, works []workv1.ManifestWork, keep *workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx)
	var errs []error
	for i := range works {
		w := &works[i]
		if keep != nil && w.Namespace == keep.Namespace && w.Name == keep.Name {
			continue
		}
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		// Preconditions: delete exactly the object we saw, never a newer one of the same name.
		err := r.client.Delete(ctx, w, client.Preconditions{UID: &w.UID})
		switch {
		case err == nil:
			log.V(2).Info("Deleted ManifestWork", "manifestWork", klog.KObj(w))
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("deleting ManifestWork %s: %w", klog.KObj(w), err))
		}
	}
	return errors.Join(errs...)
}

// apply creates desired, or updates the existing ManifestWork of that name when it differs.
func (r *reconciler) apply(ctx context.Context, desired *workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx).WithValues("manifestWork", klog.KObj(desired))
	existing := &workv1.ManifestWork{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, desired); err != nil {
			return fmt.Errorf("creating ManifestWork %s: %w", klog.KObj(desired), err)
		}
		log.V(2).Info("Created ManifestWork")
		return nil
	case err != nil:
		return fmt.Errorf("getting ManifestWork %s: %w", klog.KObj(desired), err)
	}
	if WorkUpToDate(existing, desired) {
		log.V(4).Info("ManifestWork is up to date")
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = mergeInto(updated.Labels, desired.Labels)
	updated.Annotations = mergeInto(updated.Annotations, desired.Annotations)
	updated.Spec.Workload = desired.Spec.Workload
	updated.Spec.ManifestConfigs = desired.Spec.ManifestConfigs
	updated.Spec.DeleteOption = desired.Spec.DeleteOption
	// The fetched resourceVersion makes a concurrent change a conflict, retried by requeue.
	if err := r.client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating ManifestWork %s: %w", klog.KObj(desired), err)
	}
	log.V(2).Info("Updated ManifestWork")
	return nil
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
