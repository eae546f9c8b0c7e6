// Package resourcetree serves the resource tree of every pulled Application from the hub's
// Argo CD: it writes the tree each cluster's agent reports (an ApplicationResourceTree in
// the cluster's namespace) into the hub Argo CD's Redis, under the key the hub's Argo CD
// API server reads for the hub Application, with Argo CD's own cache package. So
// `argocd app resources`, `argocd app get --show-tree`, the UI's tree and
// GET /api/v1/applications/<name>/resource-tree answer for pulled Applications as they do
// for the Applications the hub's Argo CD reconciles itself, which it skips for pulled
// ones. The key stays while the cluster is offline: the last known tree is served.
//
// Only the tree from the cluster the hub Application is pulled to counts: a tree in any
// other cluster's namespace naming the same Application is ignored. A tree travels from
// the API server to Redis once per digest: the manager caches trees without their payload
// (the cache plan in pkg/hub/manager), and the controller reads the payload with an
// uncached GET only when the digest differs from the one it last wrote for that
// Application.
package resourcetree

import (
	"context"
	"fmt"
	"sync"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	wiretree "github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/argocdredis"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "resourcetree"

// eventSource is the source of the Events the controller records.
const eventSource = "argocd-pull-resourcetree"

// Event reasons of the controller, on the hub Application.
const (
	// ReasonResourceTreeCapped: the cluster's agent left nodes out of the tree to keep
	// it within the bounds of an ApplicationResourceTree; the hub serves the rest.
	ReasonResourceTreeCapped = "ResourceTreeCapped"
	// ReasonResourceTreeNotWritten: the tree could not be written into the hub Argo CD's
	// Redis (refused, unreachable) or the ApplicationResourceTree holds no valid tree.
	ReasonResourceTreeNotWritten = "ResourceTreeNotWritten"
)

// Options configure the controller.
type Options struct {
	// Enabled runs the controller (--resource-trees).
	Enabled bool
	// ArgoCDNamespace is the hub Argo CD's namespace: its API server's, which names the
	// keys of Applications outside it "<namespace>_<name>", and RedisSecret's.
	ArgoCDNamespace string
	// RedisAddress is the hub Argo CD's Redis, host:port; empty means
	// argocd-redis.<ArgoCDNamespace>.svc:6379.
	RedisAddress string
	// RedisSecret is the Secret in ArgoCDNamespace holding the Redis password, key auth;
	// when it does not exist, Redis is used without a password.
	RedisSecret string
	// RedisCompression is the hub argocd-server's --redis-compress: gzip or none.
	RedisCompression string
}

// DefaultOptions are the controller's defaults.
func DefaultOptions() Options {
	return Options{Enabled: true, RedisSecret: argocdredis.DefaultSecret, RedisCompression: string(cacheutil.RedisCompressionGZip)}
}

// Address is RedisAddress or the Redis Service of Argo CD's installation.
func (o Options) Address() string {
	if o.RedisAddress != "" {
		return o.RedisAddress
	}
	return argocdredis.ServiceAddress(o.ArgoCDNamespace)
}

// Setup registers the controller with mgr; nothing when o.Enabled is false.
func Setup(mgr ctrl.Manager, o Options) error {
	if !o.Enabled {
		return nil
	}
	compression, err := cacheutil.CompressionTypeFromString(o.RedisCompression)
	if err != nil {
		return fmt.Errorf("--argocd-redis-compression: %w", err)
	}
	if o.ArgoCDNamespace == "" {
		return fmt.Errorf("the %s controller needs the hub Argo CD's namespace (--argocd-namespace)", ControllerName)
	}
	r := &reconciler{
		log:             mgr.GetLogger().WithName(ControllerName),
		client:          mgr.GetClient(),
		apiReader:       mgr.GetAPIReader(),
		recorder:        mgr.GetEventRecorderFor(eventSource),
		argoCDNamespace: o.ArgoCDNamespace,
		store: &store{
			// The Secret is read rarely (first write, refused password): an uncached GET,
			// so the manager needs no watch of Secrets in Argo CD's namespace for it.
			secrets:     mgr.GetAPIReader(),
			secret:      types.NamespacedName{Namespace: o.ArgoCDNamespace, Name: o.RedisSecret},
			address:     o.Address(),
			compression: compression,
		},
		states:  map[types.NamespacedName]*keyState{},
		rewrite: make(chan event.GenericEvent, rewriteBuffer),
	}
	r.store.restarted = r.redisRestarted
	return r.setupWithManager(mgr)
}

// keyState is what the controller knows of one hub Application's key in Redis.
type keyState struct {
	// digest is the digest of the tree written; "" when the key was deleted.
	digest string
	// failure is the message of the last Warning Event about a failed write; "" after a
	// write worked.
	failure string
}

type reconciler struct {
	log             logr.Logger
	client          client.Client
	apiReader       client.Reader
	recorder        record.EventRecorder
	argoCDNamespace string
	store           *store

	mu sync.Mutex
	// states: an Application without an entry has a key the controller knows nothing
	// about (it started after that key was written, or never wrote it).
	states map[types.NamespacedName]*keyState
	// rewrite gets the Applications whose trees to write again after Redis restarted.
	rewrite chan event.GenericEvent
}

// rewriteBuffer is how many Applications to write again wait for the controller; more
// wait in their own goroutine.
const rewriteBuffer = 1024

// redisRestarted forgets every key written (a restarted Redis holds none of them) and
// asks to write the trees of their Applications again.
func (r *reconciler) redisRestarted() {
	r.mu.Lock()
	var written []types.NamespacedName
	for key, s := range r.states {
		if s.digest != "" {
			written = append(written, key)
		}
	}
	clear(r.states)
	r.mu.Unlock()
	r.log.Info("The hub Argo CD's Redis restarted and lost the resource trees: writing them again", "trees", len(written))
	// Off the reconciler's goroutine (this runs inside a Redis write): the controller
	// drains rewrite.
	go func() {
		for _, key := range written {
			app := &argov1alpha1.Application{}
			app.Namespace, app.Name = key.Namespace, key.Name
			r.rewrite <- event.GenericEvent{Object: app}
		}
	}()
}

// Reconcile brings the Redis key of one hub Application in line with the tree of its
// cluster.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	app := &argov1alpha1.Application{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone: nothing else can own its key any more.
		err := r.remove(ctx, req.NamespacedName, nil, true)
		if err == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	cluster := pullmodel.TargetCluster(app)
	if !pullmodel.IsMarked(app) || cluster == "" {
		// The hub's Argo CD may reconcile it now and write its own tree there: delete only
		// a key this controller wrote.
		return ctrl.Result{}, r.remove(ctx, req.NamespacedName, app, false)
	}
	tree, err := r.acceptedTree(ctx, req.NamespacedName, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if tree == nil {
		return ctrl.Result{}, r.remove(ctx, req.NamespacedName, app, true)
	}
	if r.writtenDigest(req.NamespacedName) == tree.Tree.Digest {
		return ctrl.Result{}, nil
	}
	// The cache holds the tree without its payload.
	full := &appsv1alpha1.ApplicationResourceTree{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(tree), full); err != nil {
		// Gone since: its deletion event brings the next reconcile.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	decoded, err := wiretree.Decode(&full.Tree)
	if err != nil {
		// The same payload never decodes: its next change tries again.
		treeFailures.WithLabelValues(failureDecode).Inc()
		r.recorder.Eventf(app, corev1.EventTypeWarning, ReasonResourceTreeNotWritten,
			"The resource tree in ApplicationResourceTree %s/%s (digest %s) cannot be read: %v; the hub keeps serving the tree it had.",
			full.Namespace, full.Name, full.Tree.Digest, err)
		r.setState(req.NamespacedName, func(s *keyState) { s.digest = full.Tree.Digest })
		return ctrl.Result{}, nil
	}
	if err := r.store.set(ctx, app.InstanceName(r.argoCDNamespace), decoded); err != nil {
		return ctrl.Result{}, r.failed(app, err)
	}
	treesWritten.Inc()
	treeBytes.Add(float64(len(full.Tree.Compressed)))
	r.setState(req.NamespacedName, func(s *keyState) { s.digest, s.failure = full.Tree.Digest, "" })
	log.V(2).Info("Wrote the resource tree into the hub Argo CD's Redis", "tree", klog.KObj(full), "digest", full.Tree.Digest,
		"nodes", full.Tree.Nodes, "omittedNodes", full.Tree.OmittedNodes)
	if full.Tree.OmittedNodes > 0 {
		// Written once per digest, so said once per digest.
		r.recorder.Eventf(app, corev1.EventTypeWarning, ReasonResourceTreeCapped,
			"The resource tree from cluster %s carries %d nodes: %d were left out to keep it within %d nodes and %d KiB compressed "+
				"(deepest children first, then orphaned resources); `kubectl --context %s get` shows them on the cluster.",
			cluster, full.Tree.Nodes, full.Tree.OmittedNodes, appsv1alpha1.MaxTreeNodes, appsv1alpha1.MaxTreeCompressedBytes/1024, cluster)
	}
	return ctrl.Result{}, nil
}

// acceptedTree is the tree the hub serves for the Application key pulled to cluster: of
// the trees in the cluster's namespace naming it, the one TreeSupersedes picks; nil when
// there is none.
func (r *reconciler) acceptedTree(ctx context.Context, key types.NamespacedName, cluster string) (*appsv1alpha1.ApplicationResourceTree, error) {
	trees := &appsv1alpha1.ApplicationResourceTreeList{}
	if err := r.client.List(ctx, trees, client.InNamespace(cluster), client.MatchingFields{treeHubApplicationIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing the ApplicationResourceTrees of %s in %s: %w", key, cluster, err)
	}
	var accepted *appsv1alpha1.ApplicationResourceTree
	for i := range trees.Items {
		t := &trees.Items[i]
		if !t.DeletionTimestamp.IsZero() {
			continue
		}
		if accepted == nil || pullmodel.TreeSupersedes(t, accepted) {
			accepted = t
		}
	}
	return accepted, nil
}

// remove deletes the Redis key of the Application key (app, nil when it is gone): always
// when unknown is true and the controller does not know the key is already gone, else only
// when the controller wrote it.
func (r *reconciler) remove(ctx context.Context, key types.NamespacedName, app *argov1alpha1.Application, unknown bool) error {
	r.mu.Lock()
	state, known := r.states[key]
	r.mu.Unlock()
	if known && state.digest == "" || !known && !unknown {
		return nil
	}
	// Argo CD names the key after the namespace and name alone.
	named := &argov1alpha1.Application{}
	named.Namespace, named.Name = key.Namespace, key.Name
	instanceName := named.InstanceName(r.argoCDNamespace)
	if err := r.store.set(ctx, instanceName, nil); err != nil {
		if app == nil || !known {
			// Nothing to say on the Application: it is gone, or this is the clean-up of a
			// key the controller may never have written.
			treeFailures.WithLabelValues(failureRedis).Inc()
			return err
		}
		return r.failed(app, err)
	}
	treesDeleted.Inc()
	r.setState(key, func(s *keyState) { s.digest, s.failure = "", "" })
	ctrl.LoggerFrom(ctx).V(2).Info("Deleted the resource tree from the hub Argo CD's Redis", "key", instanceName)
	return nil
}

// failed counts a failed Redis write of app's key and says it in a Warning Event when
// its message is new; the error goes back to controller-runtime, which retries with
// backoff.
func (r *reconciler) failed(app *argov1alpha1.Application, err error) error {
	treeFailures.WithLabelValues(failureRedis).Inc()
	msg := fmt.Sprintf("The resource tree cannot be written into the hub Argo CD's Redis, so the hub's Argo CD UI and CLI do not show "+
		"its latest state: %v. Retrying.", err)
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	var said bool
	r.setState(key, func(s *keyState) { said, s.failure = s.failure == msg, msg })
	if !said {
		r.recorder.Event(app, corev1.EventTypeWarning, ReasonResourceTreeNotWritten, msg)
	}
	return err
}

// writtenDigest is the digest of the tree the controller last wrote for key; "" when it
// wrote none or deleted it.
func (r *reconciler) writtenDigest(key types.NamespacedName) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.states[key]; ok {
		return s.digest
	}
	return ""
}

func (r *reconciler) setState(key types.NamespacedName, update func(*keyState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.states[key]
	if !ok {
		s = &keyState{}
		r.states[key] = s
	}
	update(s)
}

// forget drops what the controller knew of the key of an Application that is gone.
func (r *reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.states, key)
}
