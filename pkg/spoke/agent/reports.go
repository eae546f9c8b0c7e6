package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
)

// Retry delays of a failed report write (hub unreachable, conflict): exponential per
// Application, so an outage costs a few requests a minute, never a busy loop, and the
// queue keeps every Application until its write succeeds.
const (
	retryBaseDelay = 500 * time.Millisecond
	retryMaxDelay  = 2 * time.Minute
)

// reportReconciler keeps one ApplicationStatusReport on the hub per pulled Application of
// the watched namespaces, and none for anything else.
//
// It compares before every write. The baseline is what it last wrote (the hub cache can
// lag its own write by a moment) or, when it has written nothing yet or someone else
// changed the report since, the report in the hub cache. Equal content means no request.
type reportReconciler struct {
	apps        client.Reader
	hubCache    client.Reader
	hub         client.Client
	clusterName string
	owner       *addonOwner
	// watched are the namespaces the agent watches: a report of an Application elsewhere
	// (the list changed since it was written) is stale.
	watched map[string]bool
	now     func() time.Time
	// writes learns how each write went, for the lease's reports check.
	writes *reportWriteHealth
	// healthSources learn where Argo CD keeps resource health from the Applications seen.
	healthSources *resourceHealthSources
	// trees reads Argo CD's resource tree of the Applications whose health is kept there;
	// nil reads none.
	trees *resourceTrees
	// reconnect retries the reports whose write found the hub unreachable as soon as it
	// answers again; nil leaves them to their backoff.
	reconnect *hubReconnect

	mu      sync.Mutex
	written map[string]writtenReport
}

// writtenReport is what the agent last wrote to one report.
type writtenReport struct {
	resourceVersion string
	report          *appsv1alpha1.ApplicationStatusReport
}

func newReportReconciler(apps client.Reader, hub cluster.Cluster, clusterName string, owner *addonOwner, namespaces []string,
	writes *reportWriteHealth, trees *resourceTrees, reconnect *hubReconnect) *reportReconciler {
	watched := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		watched[ns] = true
	}
	return &reportReconciler{
		apps:        apps,
		hubCache:    hub.GetCache(),
		hub:         hub.GetClient(),
		clusterName: clusterName,
		owner:       owner,
		watched:     watched,
		now:         time.Now,
		writes:      writes,
		// The agent's own: the environment controller gets them from here.
		healthSources: newResourceHealthSources(),
		trees:         trees,
		reconnect:     reconnect,
		written:       map[string]writtenReport{},
	}
}

// start adds the report controller to the running (or starting) manager. Its sources
// are the Applications of the managed cluster and the agent's reports on the hub: at
// start-up both list everything, so every report is refreshed and every report whose
// Application is gone is deleted, without a separate resync.
func (r *reportReconciler) start(mgr manager.Manager, hub cluster.Cluster, window time.Duration) error {
	c, err := controller.NewTypedUnmanaged[reconcile.Request]("application-status-report", controller.TypedOptions[reconcile.Request]{
		Reconciler:  r,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, retryMaxDelay),
		// The hub may be unreachable when the agent starts: wait for it rather than fail.
		CacheSyncTimeout:   24 * time.Hour,
		SkipNameValidation: ptr.To(true),
		Logger:             mgr.GetLogger().WithName("application-status-report"),
	})
	if err != nil {
		return fmt.Errorf("creating the report controller: %w", err)
	}
	apps := &coalescingHandler{delay: window, requests: applicationRequest}
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&argov1alpha1.Application{}), apps)); err != nil {
		return fmt.Errorf("watching Applications: %w", err)
	}
	reports := &coalescingHandler{delay: window, requests: reportRequest, observe: r.observeReport}
	if err := c.Watch(source.Kind(hub.GetCache(), client.Object(&appsv1alpha1.ApplicationStatusReport{}), reports)); err != nil {
		return fmt.Errorf("watching hub reports: %w", err)
	}
	if r.reconnect != nil {
		// Applications whose write found the hub unreachable, once it answers again.
		if err := c.Watch(source.Channel(r.reconnect.retry, apps)); err != nil {
			return fmt.Errorf("watching hub reconnects: %w", err)
		}
	}
	if r.trees != nil {
		// Applications whose tree could not be read, once a read works again.
		if err := c.Watch(source.Channel(r.trees.retry, apps)); err != nil {
			return fmt.Errorf("watching resource tree retries: %w", err)
		}
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the report controller: %w", err)
	}
	return nil
}

func applicationRequest(obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// reportRequest maps a hub report to the Application it reports.
func reportRequest(obj client.Object) []reconcile.Request {
	rep, ok := obj.(*appsv1alpha1.ApplicationStatusReport)
	if !ok || rep.Source.Namespace == "" || rep.Source.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: rep.Source.Namespace, Name: rep.Source.Name}}}
}

// observeReport forgets the agent's own last write of a report someone else changed or
// deleted, so the next reconcile compares with the hub's copy and repairs it.
func (r *reportReconciler) observeReport(obj client.Object, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.written[obj.GetName()]; ok && (deleted || w.resourceVersion != obj.GetResourceVersion()) {
		delete(r.written, obj.GetName())
	}
}

// Reconcile brings the report of the Application req in line with the Application.
func (r *reportReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	name := report.ReportName(req.Namespace, req.Name)
	res, err := r.reconcile(ctx, req, name)
	if err == nil {
		// Nothing of this report is left to retry, whether it was written or not.
		r.writes.settled(name)
	}
	if err == nil && r.reconnect != nil {
		r.reconnect.settled(req.NamespacedName)
	}
	return res, err
}

func (r *reportReconciler) reconcile(ctx context.Context, req reconcile.Request, name string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("application", klog.KRef(req.Namespace, req.Name))

	app := &argov1alpha1.Application{}
	if !r.watched[req.Namespace] {
		app = nil
	} else if err := r.apps.Get(ctx, req.NamespacedName, app); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading Application %s: %w", req, err)
		}
		app = nil
	}
	if app == nil || !pulledFromHub(app) {
		r.healthSources.observe(req.NamespacedName, nil)
		if r.trees != nil {
			r.trees.forget(req.NamespacedName)
		}
		return ctrl.Result{}, r.hubFailed(req, r.deleteReport(ctx, name))
	}
	r.healthSources.observe(req.NamespacedName, app)

	owner, err := r.owner.reference(ctx)
	if err != nil {
		return ctrl.Result{}, r.hubFailed(req, err)
	}
	var tree *argov1alpha1.ApplicationTree
	if r.trees != nil && treeWanted(app) {
		tree = r.trees.Tree(ctx, app)
	}
	desired := desiredReport(app, tree, r.clusterName, owner)
	if r.upToDate(ctx, desired) {
		reportsUnchanged.Inc()
		log.V(4).Info("Report unchanged", "report", klog.KRef(r.clusterName, name))
		return ctrl.Result{}, nil
	}
	if err := r.apply(ctx, desired); err != nil {
		reportWriteErrors.WithLabelValues(operationApply).Inc()
		return ctrl.Result{}, r.hubFailed(req, err)
	}
	reportWrites.WithLabelValues(operationApply).Inc()
	log.V(2).Info("Report written", "report", klog.KRef(r.clusterName, name),
		"sync", desired.Status.Sync.Status, "health", desired.Status.Health.Status)
	return ctrl.Result{}, nil
}

// hubFailed hands err, from a request to the hub about Application req, to the
// reconnect, which retries req as soon as the hub answers again if the hub could not be
// reached; it returns err. Only hub requests: a retry when the hub answers cannot help a
// failure of the managed cluster.
func (r *reportReconciler) hubFailed(req reconcile.Request, err error) error {
	if err != nil && r.reconnect != nil {
		r.reconnect.failed(req.NamespacedName, err)
	}
	return err
}

// upToDate says whether the hub already holds desired's content.
func (r *reportReconciler) upToDate(ctx context.Context, desired *appsv1alpha1.ApplicationStatusReport) bool {
	r.mu.Lock()
	w, ok := r.written[desired.Name]
	r.mu.Unlock()
	if ok {
		return sameContent(w.report, desired)
	}
	current := &appsv1alpha1.ApplicationStatusReport{}
	if err := r.hubCache.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
		return false
	}
	return sameContent(current, desired)
}

// apply writes desired with server-side apply: one request whether the report exists or
// not, and no conflict with a hub cache that has not seen the agent's last write yet.
// ObservedAt is the time of the write: it moves only when the content does.
func (r *reportReconciler) apply(ctx context.Context, desired *appsv1alpha1.ApplicationStatusReport) error {
	resourceVersion, err := applyReport(ctx, r.hub, desired, r.now())
	if err != nil {
		r.writes.failed(desired.Name, err)
		return err
	}
	r.writes.succeeded(desired.Name)
	r.mu.Lock()
	r.written[desired.Name] = writtenReport{resourceVersion: resourceVersion, report: desired}
	r.mu.Unlock()
	return nil
}

// PublishReport writes the report of app, a pulled Application on cluster clusterName, to
// the hub through hub exactly as the agent does (same content, owned by owner as
// AddonOwnerReference makes it, field owner and server-side apply), with ObservedAt now,
// and returns the report written. It skips the agent's
// compare-before-write: callers such as the scale benchmark publish only changes.
// It reads no resource tree.
func PublishReport(ctx context.Context, hub client.Client, app *argov1alpha1.Application, clusterName string, owner metav1.OwnerReference, now time.Time) (*appsv1alpha1.ApplicationStatusReport, error) {
	desired := desiredReport(app, nil, clusterName, owner)
	if _, err := applyReport(ctx, hub, desired, now); err != nil {
		return nil, err
	}
	return desired, nil
}

// applyReport writes desired with server-side apply, ObservedAt set to now (to the
// second), and returns the resourceVersion the hub answered with.
func applyReport(ctx context.Context, hub client.Client, desired *appsv1alpha1.ApplicationStatusReport, now time.Time) (string, error) {
	desired.Status.ObservedAt.Time = now.Truncate(time.Second)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return "", fmt.Errorf("converting report %s: %w", desired.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying report %s/%s on the hub: %w", desired.Namespace, desired.Name, err)
	}
	return u.GetResourceVersion(), nil
}

// deleteReport deletes the report name, if the agent wrote one or the hub has one.
func (r *reportReconciler) deleteReport(ctx context.Context, name string) error {
	r.mu.Lock()
	_, wrote := r.written[name]
	r.mu.Unlock()
	existing := &appsv1alpha1.ApplicationStatusReport{}
	err := r.hubCache.Get(ctx, types.NamespacedName{Namespace: r.clusterName, Name: name}, existing)
	switch {
	case apierrors.IsNotFound(err) && !wrote:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading report %s/%s from the hub cache: %w", r.clusterName, name, err)
	}
	existing.Namespace, existing.Name = r.clusterName, name
	if err := r.hub.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
		reportWriteErrors.WithLabelValues(operationDelete).Inc()
		err = fmt.Errorf("deleting report %s/%s on the hub: %w", r.clusterName, name, err)
		r.writes.failed(name, err)
		return err
	}
	r.writes.succeeded(name)
	r.mu.Lock()
	delete(r.written, name)
	r.mu.Unlock()
	reportWrites.WithLabelValues(operationDelete).Inc()
	ctrl.LoggerFrom(ctx).V(2).Info("Report deleted", "report", klog.KRef(r.clusterName, name))
	return nil
}
