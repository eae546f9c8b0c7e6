// Package reports keeps one ApplicationStatusReport on the hub per pulled Application of
// the watched namespaces: the report controller, the report's content, the coalescing of
// an Application's changes into one write, and the report's owner, the agent's
// ManagedClusterAddOn. Beside it, the resource tree controller (tree.go) keeps the
// Application's ApplicationResourceTree, named, labelled and owned like its report.
package reports

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
)

// WriteRecorder learns how each report write went (the lease's reports check follows
// them).
type WriteRecorder interface {
	// Succeeded records a write of the report name the hub took.
	Succeeded(name string)
	// Failed records a write of the report name that failed; the controller retries it.
	Failed(name string, err error)
	// Settled records that a reconcile of the report name ended without a failed write.
	Settled(name string)
}

// HealthObserver learns where Argo CD keeps resource health from the Applications the
// controller sees.
type HealthObserver interface {
	// Observe records the Application key as app shows it; nil forgets it.
	Observe(key types.NamespacedName, app *argov1alpha1.Application)
}

// TreeReader reads Argo CD's resource tree of the Applications whose health is kept there.
type TreeReader interface {
	// Tree is app's resource tree, nil when there is none or it cannot be read.
	Tree(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.ApplicationTree
	// Forget drops key, an Application deleted or no longer reported.
	Forget(key types.NamespacedName)
	// Retries gets the Applications whose trees to read again.
	Retries() <-chan event.GenericEvent
}

// Reconnect retries the reports whose write found the hub unreachable as soon as it
// answers again.
type Reconnect interface {
	// Failed records that the report write of Application app failed with err.
	Failed(app types.NamespacedName, err error)
	// Settled records that app's report needs no retry any more.
	Settled(app types.NamespacedName)
	// Retries gets the Applications to reconcile again once the hub answers.
	Retries() <-chan event.GenericEvent
}

// Reconciler keeps one ApplicationStatusReport on the hub per pulled Application of
// the watched namespaces, and none for anything else.
//
// It compares before every write. The baseline is what it last wrote (the hub cache can
// lag its own write by a moment) or, when it has written nothing yet or someone else
// changed the report since, the report in the hub cache. Equal content means no request.
type Reconciler struct {
	apps        client.Reader
	hubCache    client.Reader
	hub         client.Client
	clusterName string
	owner       *AddonOwner
	// watched are the namespaces the agent watches: a report of an Application elsewhere
	// (the list changed since it was written) is stale.
	watched map[string]bool
	now     func() time.Time
	// writes learns how each write went, for the lease's reports check.
	writes WriteRecorder
	// healthSources learn where Argo CD keeps resource health from the Applications seen.
	healthSources HealthObserver
	// trees reads Argo CD's resource tree of the Applications whose health is kept there;
	// nil reads none.
	trees TreeReader
	// reconnect retries the reports whose write found the hub unreachable as soon as it
	// answers again; nil leaves them to their backoff.
	reconnect Reconnect

	mu      sync.Mutex
	applied map[string]appliedReport
}

// appliedReport is what the hub holds of one report as the agent last applied it: the
// baseline of the comparison before the next write. Unlike the hub controllers' own-write
// tracker (pkg/internal/ownwrites), it is read instead of the hub cache, not on top of it:
// a server-side apply has no base version to build on and cannot conflict, so all the
// agent needs is the content it last applied and the version that write made.
type appliedReport struct {
	resourceVersion string
	report          *appsv1alpha1.ApplicationStatusReport
}

// NewReconciler reports the pulled Applications of namespaces, read through apps, to the
// namespace clusterName of hub, owned by owner. writes and healthSources learn from every
// reconcile; trees (nil: none) reads the resource trees the reports carry; reconnect
// (nil: none) retries the reports whose write found the hub unreachable.
func NewReconciler(apps client.Reader, hub cluster.Cluster, clusterName string, owner *AddonOwner, namespaces []string,
	writes WriteRecorder, healthSources HealthObserver, trees TreeReader, reconnect Reconnect) *Reconciler {
	watched := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		watched[ns] = true
	}
	return &Reconciler{
		apps:          apps,
		hubCache:      hub.GetCache(),
		hub:           hub.GetClient(),
		clusterName:   clusterName,
		owner:         owner,
		watched:       watched,
		now:           time.Now,
		writes:        writes,
		healthSources: healthSources,
		trees:         trees,
		reconnect:     reconnect,
		applied:       map[string]appliedReport{},
	}
}

// Start adds the report controller to the running (or starting) manager. Its sources
// are the Applications of the managed cluster and the agent's reports on the hub: at
// start-up both list everything, so every report is refreshed and every report whose
// Application is gone is deleted, without a separate resync.
func (r *Reconciler) Start(mgr manager.Manager, hub cluster.Cluster, window time.Duration) error {
	c, err := controller.NewTypedUnmanaged[reconcile.Request]("application-status-report", controller.TypedOptions[reconcile.Request]{
		Reconciler:  r,
		RateLimiter: retry.NewRateLimiter[reconcile.Request](),
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
		if err := c.Watch(source.Channel(r.reconnect.Retries(), apps)); err != nil {
			return fmt.Errorf("watching hub reconnects: %w", err)
		}
	}
	if r.trees != nil {
		// Applications whose tree could not be read, once a read works again.
		if err := c.Watch(source.Channel(r.trees.Retries(), apps)); err != nil {
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
func (r *Reconciler) observeReport(obj client.Object, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.applied[obj.GetName()]; ok && (deleted || w.resourceVersion != obj.GetResourceVersion()) {
		delete(r.applied, obj.GetName())
	}
}

// Reconcile brings the report of the Application req in line with the Application.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	name := report.ReportName(req.Namespace, req.Name)
	res, err := r.reconcile(ctx, req, name)
	if err == nil {
		// Nothing of this report is left to retry, whether it was written or not.
		r.writes.Settled(name)
	}
	if err == nil && r.reconnect != nil {
		r.reconnect.Settled(req.NamespacedName)
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request, name string) (ctrl.Result, error) {
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
	if app == nil || !pullmodel.DeliveredFromHub(app) {
		r.healthSources.Observe(req.NamespacedName, nil)
		if r.trees != nil {
			r.trees.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, hubFailed(r.reconnect, req, r.deleteReport(ctx, name))
	}
	r.healthSources.Observe(req.NamespacedName, app)

	owner, err := r.owner.Reference(ctx)
	if err != nil {
		return ctrl.Result{}, hubFailed(r.reconnect, req, err)
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
		return ctrl.Result{}, hubFailed(r.reconnect, req, err)
	}
	reportWrites.WithLabelValues(operationApply).Inc()
	log.V(2).Info("Report written", "report", klog.KRef(r.clusterName, name),
		"sync", desired.Status.Sync.Status, "health", desired.Status.Health.Status)
	return ctrl.Result{}, nil
}

// hubFailed hands err, from a request to the hub about Application req, to reconnect
// (nil: none), which retries req as soon as the hub answers again if the hub could not be
// reached; it returns err. Only hub requests: a retry when the hub answers cannot help a
// failure of the managed cluster. The report and the tree controllers share it.
func hubFailed(reconnect Reconnect, req reconcile.Request, err error) error {
	if err != nil && reconnect != nil {
		reconnect.Failed(req.NamespacedName, err)
	}
	return err
}

// upToDate says whether the hub already holds desired's content.
func (r *Reconciler) upToDate(ctx context.Context, desired *appsv1alpha1.ApplicationStatusReport) bool {
	r.mu.Lock()
	w, ok := r.applied[desired.Name]
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
func (r *Reconciler) apply(ctx context.Context, desired *appsv1alpha1.ApplicationStatusReport) error {
	resourceVersion, err := applyReport(ctx, r.hub, desired, r.now())
	if err != nil {
		r.writes.Failed(desired.Name, err)
		return err
	}
	r.writes.Succeeded(desired.Name)
	r.mu.Lock()
	r.applied[desired.Name] = appliedReport{resourceVersion: resourceVersion, report: desired}
	r.mu.Unlock()
	return nil
}

// deleteReport deletes the report name, if the agent wrote one or the hub has one.
func (r *Reconciler) deleteReport(ctx context.Context, name string) error {
	r.mu.Lock()
	_, wrote := r.applied[name]
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
		r.writes.Failed(name, err)
		return err
	}
	r.writes.Succeeded(name)
	r.mu.Lock()
	delete(r.applied, name)
	r.mu.Unlock()
	reportWrites.WithLabelValues(operationDelete).Inc()
	ctrl.LoggerFrom(ctx).V(2).Info("Report deleted", "report", klog.KRef(r.clusterName, name))
	return nil
}

// treeWanted says whether app's report needs the tree: Argo CD keeps its resources' health
// there, not in the Application.
func treeWanted(app *argov1alpha1.Application) bool {
	return app.Status.ResourceHealthSource == argov1alpha1.ResourceHealthLocationAppTree
}
