// Package propagation wraps each marked hub Argo CD Application in an OCM ManifestWork
// in its target cluster's namespace, and keeps exactly one such ManifestWork per live
// marked Application (DESIGN §4).
package propagation

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller, its logger and its Event source.
const ControllerName = "argocd-pull-propagation"

const (
	// workHubAppIndex indexes ManifestWorks by "<namespace>/<name>" of their hub Application.
	workHubAppIndex = "propagation.hubApplication"
	// appClusterIndex indexes Applications by their target cluster annotation.
	appClusterIndex = "propagation.targetCluster"
)

// Event reasons on the hub Application.
const (
	ReasonInvalidPullLabel     = "InvalidPullLabel"
	ReasonInvalidApplication   = "InvalidPullAnnotations"
	ReasonClusterNotFound      = "ManagedClusterNotFound"
	ReasonClusterDeleting      = "ManagedClusterDeleting"
	ReasonLocalCluster         = "LocalClusterNotATarget"
	ReasonManifestWorkDeleting = "ManifestWorkDeleting"
)

// Reconciler reconciles one hub Application (by namespace/name) into at most one ManifestWork.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// MaxConcurrentReconciles is the number of Applications reconciled in parallel.
	MaxConcurrentReconciles int
}

// NewReconciler returns a Reconciler using mgr's cached client and Event recorder.
func NewReconciler(mgr ctrl.Manager) *Reconciler {
	return &Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor(ControllerName),
		// A reconcile mostly waits for one ManifestWork write. BenchmarkBurst (5,000
		// Applications, 2 cores): 10 workers, median 34 s; 32 workers, median 30.5 s, and
		// the API server is then CPU-bound, so more workers would only queue there.
		MaxConcurrentReconciles: 32,
	}
}

// Setup registers a new Reconciler with mgr; the manager's controller list calls it.
func Setup(mgr ctrl.Manager) error {
	return NewReconciler(mgr).SetupWithManager(mgr)
}

// SetupWithManager registers the field indexes and the watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &workv1.ManifestWork{}, workHubAppIndex, indexWorkByHubApp); err != nil {
		return fmt.Errorf("indexing ManifestWorks by hub Application: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &argov1alpha1.Application{}, appClusterIndex, indexAppByCluster); err != nil {
		return fmt.Errorf("indexing Applications by target cluster: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&argov1alpha1.Application{}, builder.WithPredicates(hasPullLabel())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workToApp),
			builder.WithPredicates(hasPullLabel())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToApps),
			builder.WithPredicates(clusterTargetability())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

func indexWorkByHubApp(obj client.Object) []string {
	if key, ok := hubAppKey(obj); ok {
		return []string{key.String()}
	}
	return nil
}

func indexAppByCluster(obj client.Object) []string {
	if c := obj.GetAnnotations()[apps.AnnotationOCMManagedCluster]; c != "" {
		return []string{c}
	}
	return nil
}

// hubAppKey reads the hub Application a ManifestWork belongs to from its annotations.
func hubAppKey(obj client.Object) (types.NamespacedName, bool) {
	ns, name := obj.GetAnnotations()[apps.AnnotationHubApplicationNamespace], obj.GetAnnotations()[apps.AnnotationHubApplicationName]
	if ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

func workToApp(_ context.Context, obj client.Object) []reconcile.Request {
	if key, ok := hubAppKey(obj); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

func (r *Reconciler) clusterToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	apps := &argov1alpha1.ApplicationList{}
	if err := r.Client.List(ctx, apps, client.MatchingFields{appClusterIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of a ManagedCluster", "managedCluster", klog.KObj(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(apps.Items))
	for i := range apps.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
	}
	return reqs
}

// hasPullLabel passes objects carrying the pull label, with any value, before or after
// an update: removing the label or setting it to false must still reach Reconcile.
func hasPullLabel() predicate.Predicate {
	has := func(obj client.Object) bool {
		if obj == nil {
			return false
		}
		_, ok := obj.GetLabels()[apps.LabelPullToOCMManagedCluster]
		return ok
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return has(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return has(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return has(e.ObjectOld) || has(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return has(e.Object) },
	}
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

// Reconcile brings the ManifestWorks of the hub Application req names to the desired
// state: one up-to-date ManifestWork when the Application is live, marked and valid, none
// otherwise.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The controller's logger already names the Application.
	works, err := r.worksOf(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}

	app := &argov1alpha1.Application{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
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

// worksOf lists the ManifestWorks the cache holds for hub Application key.
func (r *Reconciler) worksOf(ctx context.Context, key types.NamespacedName) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{workHubAppIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing the ManifestWorks of Application %s: %w", key, err)
	}
	return list.Items, nil
}

// reconcileDelete deletes app's ManifestWorks and, once none is left, releases Argo CD's
// resources finalizer, which the hub Argo CD never removes from an Application it skips.
func (r *Reconciler) reconcileDelete(ctx context.Context, app *argov1alpha1.Application, works []workv1.ManifestWork) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if len(works) > 0 {
		// The ManifestWork watch brings us back once they are gone.
		log.V(2).Info("Application is being deleted, deleting its ManifestWorks", "count", len(works))
		return ctrl.Result{}, r.deleteWorks(ctx, works, nil)
	}
	marked, _ := Marked(app)
	if !marked || !controllerutil.ContainsFinalizer(app, ResourcesFinalizer) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(app, ResourcesFinalizer)
	if err := r.Client.Patch(ctx, app, patch); err != nil {
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
func (r *Reconciler) desiredWork(ctx context.Context, app *argov1alpha1.Application) (*workv1.ManifestWork, error) {
	log := ctrl.LoggerFrom(ctx)
	marked, err := Marked(app)
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
func (r *Reconciler) targetable(ctx context.Context, app *argov1alpha1.Application) (bool, error) {
	name := TargetCluster(app)
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
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

func (r *Reconciler) warn(ctx context.Context, app *argov1alpha1.Application, reason, msg string) {
	ctrl.LoggerFrom(ctx).V(2).Info("Not propagating the Application", "reason", reason, "message", msg)
	r.Recorder.Event(app, corev1.EventTypeWarning, reason, msg)
}

// deleteWorks deletes every work in works that is not keep (nil: all of them).
func (r *Reconciler) deleteWorks(ctx context.Context, works []workv1.ManifestWork, keep *workv1.ManifestWork) error {
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
		err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID})
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
func (r *Reconciler) apply(ctx context.Context, desired *workv1.ManifestWork) error {
	log := ctrl.LoggerFrom(ctx).WithValues("manifestWork", klog.KObj(desired))
	existing := &workv1.ManifestWork{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, desired); err != nil {
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
	if err := r.Client.Update(ctx, updated); err != nil {
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
