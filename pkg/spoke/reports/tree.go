package reports

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
)

// DefaultTreeInterval is the least time between two writes of one Application's resource
// tree. Argo CD rewrites a tree on every reconcile of its Application and on every change
// of one of its resources (a Pod's status, say), which in a rollout is many a second; the
// hub shows the newest tree at most this late, at a tenth of the writes.
const DefaultTreeInterval = 10 * time.Second

// TreeReconciler keeps one ApplicationResourceTree on the hub per pulled Application of
// the watched namespaces, next to its report (same namespace, same name, same source,
// same owner and labels), and none for anything else.
//
// Its trigger is the Application changing: Argo CD writes the tree before it updates the
// Application's status (reconciledAt at least), so the change that follows a new tree
// brings the read. It writes only when the tree's digest (or the object's labels, owner
// or source) differs from what the hub holds, and at most once per Application per
// interval: a change inside the interval holds the Application back until the interval is
// over, and the read then takes the newest tree, so a burst is one write.
//
// Switched off (no TreeReader), it reads nothing and deletes every tree the agent wrote:
// the hub shows no tree the agent no longer keeps up to date.
type TreeReconciler struct {
	apps        client.Reader
	hubCache    client.Reader
	hub         client.Client
	clusterName string
	owner       *AddonOwner
	watched     map[string]bool
	// trees reads Argo CD's resource trees; nil switches the trees off.
	trees     TreeReader
	interval  time.Duration
	reconnect Reconnect
	now       func() time.Time

	mu sync.Mutex
	// applied is what the hub holds of each tree as the agent last applied it, its payload
	// left out (the digest says what it was); written is when each was last written.
	applied map[string]appliedTree
	written map[string]time.Time
}

type appliedTree struct {
	resourceVersion string
	tree            *appsv1alpha1.ApplicationResourceTree
}

// NewTreeReconciler writes the resource trees, read with trees (nil: switched off), of
// the pulled Applications of namespaces, read through apps, to the namespace clusterName
// of hub, owned by owner, at most once per Application per interval; reconnect (nil:
// none) retries the writes that found the hub unreachable as soon as it answers again.
func NewTreeReconciler(apps client.Reader, hub cluster.Cluster, clusterName string, owner *AddonOwner, namespaces []string,
	trees TreeReader, interval time.Duration, reconnect Reconnect) *TreeReconciler {
	watched := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		watched[ns] = true
	}
	return &TreeReconciler{
		apps: apps, hubCache: hub.GetCache(), hub: hub.GetClient(), clusterName: clusterName, owner: owner,
		watched: watched, trees: trees, interval: interval, reconnect: reconnect, now: time.Now,
		applied: map[string]appliedTree{}, written: map[string]time.Time{},
	}
}

// Start adds the resource tree controller to the running (or starting) manager. Its
// sources are the Applications of the managed cluster and the agent's trees on the hub:
// at start-up both list everything, so every tree whose Application is gone is deleted.
func (r *TreeReconciler) Start(mgr manager.Manager, hub cluster.Cluster, window time.Duration) error {
	c, err := controller.NewTypedUnmanaged[reconcile.Request]("application-resource-tree", controller.TypedOptions[reconcile.Request]{
		Reconciler:         r,
		RateLimiter:        retry.NewRateLimiter[reconcile.Request](),
		CacheSyncTimeout:   24 * time.Hour,
		SkipNameValidation: ptr.To(true),
		Logger:             mgr.GetLogger().WithName("application-resource-tree"),
	})
	if err != nil {
		return fmt.Errorf("creating the resource tree controller: %w", err)
	}
	// An Application's change waits for the coalescing window, or for the end of its
	// interval when its tree was written less than an interval ago.
	apps := &coalescingHandler{requests: applicationRequest, delayOf: func(req reconcile.Request) time.Duration {
		return max(window, r.untilWritable(report.ReportName(req.Namespace, req.Name)))
	}}
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&argov1alpha1.Application{}), apps)); err != nil {
		return fmt.Errorf("watching Applications: %w", err)
	}
	trees := &coalescingHandler{delay: window, requests: r.treeRequest, observe: r.observeTree}
	if err := c.Watch(source.Kind(hub.GetCache(), client.Object(&appsv1alpha1.ApplicationResourceTree{}), trees)); err != nil {
		return fmt.Errorf("watching hub resource trees: %w", err)
	}
	if r.reconnect != nil {
		if err := c.Watch(source.Channel(r.reconnect.Retries(), apps)); err != nil {
			return fmt.Errorf("watching hub reconnects: %w", err)
		}
	}
	if r.trees != nil {
		if err := c.Watch(source.Channel(r.trees.Retries(), apps)); err != nil {
			return fmt.Errorf("watching resource tree retries: %w", err)
		}
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the resource tree controller: %w", err)
	}
	return nil
}

// treeRequest maps a hub tree to the Application it is the tree of, except the agent's
// own last write coming back from the hub: that would only read the tree again, once the
// interval is over, to find it unchanged. (A deletion reaches observeTree first, which
// forgets the write.)
func (r *TreeReconciler) treeRequest(obj client.Object) []reconcile.Request {
	t, ok := obj.(*appsv1alpha1.ApplicationResourceTree)
	if !ok || t.Source.Namespace == "" || t.Source.Name == "" {
		return nil
	}
	r.mu.Lock()
	w, own := r.applied[t.Name]
	r.mu.Unlock()
	if own && w.resourceVersion == t.ResourceVersion {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: t.Source.Namespace, Name: t.Source.Name}}}
}

// observeTree forgets the agent's own last write of a tree someone else changed or
// deleted, so the next reconcile compares with the hub's copy and repairs it.
func (r *TreeReconciler) observeTree(obj client.Object, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.applied[obj.GetName()]; ok && (deleted || w.resourceVersion != obj.GetResourceVersion()) {
		delete(r.applied, obj.GetName())
	}
}

// untilWritable is how long the tree name must wait for its next write; 0 when it may be
// written now.
func (r *TreeReconciler) untilWritable(name string) time.Duration {
	r.mu.Lock()
	last, ok := r.written[name]
	r.mu.Unlock()
	if !ok {
		return 0
	}
	return max(0, last.Add(r.interval).Sub(r.now()))
}

// Reconcile brings the resource tree of the Application req in line with Argo CD's.
func (r *TreeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req, report.ReportName(req.Namespace, req.Name))
	if err == nil && r.reconnect != nil {
		r.reconnect.Settled(req.NamespacedName)
	}
	return res, err
}

func (r *TreeReconciler) reconcile(ctx context.Context, req reconcile.Request, name string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("application", klog.KRef(req.Namespace, req.Name))

	app := &argov1alpha1.Application{}
	if !r.watched[req.Namespace] || r.trees == nil {
		app = nil
	} else if err := r.apps.Get(ctx, req.NamespacedName, app); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading Application %s: %w", req, err)
		}
		app = nil
	}
	if app == nil || !pullmodel.DeliveredFromHub(app) {
		return ctrl.Result{}, hubFailed(r.reconnect, req, r.deleteTree(ctx, name))
	}
	if wait := r.untilWritable(name); wait > 0 {
		// Read when the interval is over: the tree then is the newest.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	observedAt := r.now()
	tree := r.trees.Tree(ctx, app)
	if tree == nil {
		// None yet, or unreadable (the reader retries once reads work): the hub keeps the
		// last one.
		return ctrl.Result{}, nil
	}
	data, err := resourcetree.Encode(tree)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("encoding the resource tree of Application %s: %w", req, err)
	}
	data.ObservedAt = metav1.NewTime(observedAt.Truncate(time.Second))
	owner, err := r.owner.Reference(ctx)
	if err != nil {
		return ctrl.Result{}, hubFailed(r.reconnect, req, err)
	}
	desired := desiredTree(app, data, r.clusterName, owner)
	if r.upToDate(ctx, desired) {
		treesUnchanged.Inc()
		log.V(4).Info("Resource tree unchanged", "tree", klog.KRef(r.clusterName, name))
		return ctrl.Result{}, nil
	}
	resourceVersion, err := applyAsAgent(ctx, r.hub, desired)
	if err != nil {
		treeWriteErrors.WithLabelValues(operationApply).Inc()
		return ctrl.Result{}, hubFailed(r.reconnect, req, err)
	}
	treeWrites.WithLabelValues(operationApply).Inc()
	treeBytes.Add(float64(len(data.Compressed)))
	desired.Tree.Compressed = nil
	r.mu.Lock()
	r.applied[name] = appliedTree{resourceVersion: resourceVersion, tree: desired}
	r.written[name] = r.now()
	r.mu.Unlock()
	log.V(2).Info("Resource tree written", "tree", klog.KRef(r.clusterName, name),
		"nodes", data.Nodes, "omittedNodes", data.OmittedNodes, "bytes", len(data.Compressed))
	return ctrl.Result{}, nil
}

// upToDate says whether the hub already holds desired's tree, labels, owner and source.
func (r *TreeReconciler) upToDate(ctx context.Context, desired *appsv1alpha1.ApplicationResourceTree) bool {
	r.mu.Lock()
	w, ok := r.applied[desired.Name]
	r.mu.Unlock()
	if ok {
		return sameTree(w.tree, desired)
	}
	current := &appsv1alpha1.ApplicationResourceTree{}
	if err := r.hubCache.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
		return false
	}
	return sameTree(current, desired)
}

// deleteTree deletes the tree name, if the agent wrote one or the hub has one.
func (r *TreeReconciler) deleteTree(ctx context.Context, name string) error {
	r.mu.Lock()
	_, wrote := r.applied[name]
	r.mu.Unlock()
	existing := &appsv1alpha1.ApplicationResourceTree{}
	err := r.hubCache.Get(ctx, types.NamespacedName{Namespace: r.clusterName, Name: name}, existing)
	switch {
	case apierrors.IsNotFound(err) && !wrote:
		r.forget(name)
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading resource tree %s/%s from the hub cache: %w", r.clusterName, name, err)
	}
	existing.Namespace, existing.Name = r.clusterName, name
	if err := r.hub.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
		treeWriteErrors.WithLabelValues(operationDelete).Inc()
		return fmt.Errorf("deleting resource tree %s/%s on the hub: %w", r.clusterName, name, err)
	}
	r.forget(name)
	treeWrites.WithLabelValues(operationDelete).Inc()
	ctrl.LoggerFrom(ctx).V(2).Info("Resource tree deleted", "tree", klog.KRef(r.clusterName, name))
	return nil
}

func (r *TreeReconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.applied, name)
	delete(r.written, name)
}

// PublishTree writes tree, the resource tree of app, a pulled Application on cluster
// clusterName, to the hub through hub exactly as the agent does (same encoding, name,
// labels, source, owned by owner as AddonOwnerReference makes it, field owner and
// server-side apply), read at now, and returns what it wrote. It skips the agent's
// compare-before-write and its interval.
func PublishTree(ctx context.Context, hub client.Client, app *argov1alpha1.Application, tree *argov1alpha1.ApplicationTree,
	clusterName string, owner metav1.OwnerReference, now time.Time) (*appsv1alpha1.ApplicationResourceTree, error) {
	data, err := resourcetree.Encode(tree)
	if err != nil {
		return nil, err
	}
	data.ObservedAt = metav1.NewTime(now.Truncate(time.Second))
	desired := desiredTree(app, data, clusterName, owner)
	if _, err := applyAsAgent(ctx, hub, desired); err != nil {
		return nil, err
	}
	return desired, nil
}

// desiredTree is the ApplicationResourceTree of app carrying data, named, labelled and
// owned like its report.
func desiredTree(app *argov1alpha1.Application, data appsv1alpha1.ResourceTreeData, clusterName string, owner metav1.OwnerReference) *appsv1alpha1.ApplicationResourceTree {
	source := reportSource(app, clusterName)
	return &appsv1alpha1.ApplicationResourceTree{
		TypeMeta: metav1.TypeMeta{
			APIVersion: appsv1alpha1.GroupVersion.String(),
			Kind:       "ApplicationResourceTree",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:            report.ReportName(app.Namespace, app.Name),
			Namespace:       clusterName,
			Labels:          reportLabels(source),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Source: source,
		Tree:   data,
	}
}

// sameTree says whether current already says what desired says: the agent's labels,
// owner and source, and the tree by its digest, ignoring ObservedAt.
func sameTree(current, desired *appsv1alpha1.ApplicationResourceTree) bool {
	return sameAgentMetadata(current, desired) && current.Source == desired.Source &&
		current.Tree.Digest == desired.Tree.Digest && current.Tree.Nodes == desired.Tree.Nodes &&
		current.Tree.OmittedNodes == desired.Tree.OmittedNodes
}

// DropTreePayload is a hub cache transform that leaves out the compressed tree of an
// ApplicationResourceTree: the agent compares trees by digest, and a cache of a thousand
// trees of up to MaxTreeCompressedBytes each would cost it hundreds of megabytes.
func DropTreePayload(obj any) (any, error) {
	if t, ok := obj.(*appsv1alpha1.ApplicationResourceTree); ok {
		t.Tree.Compressed = nil
	}
	return obj, nil
}
