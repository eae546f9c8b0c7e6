// Package resourcetree reads Argo CD's resource tree of the pulled Applications from
// Argo CD's Redis, and follows where Argo CD keeps per-resource health: the two
// ManagedClusterAddOn conditions (ResourceTreeReadable, ResourceHealthPersisted) about
// what the reports can carry.
package resourcetree

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/argocdredis"
)

// DefaultRedisSecret is where Argo CD's own installation keeps its Redis password.
const DefaultRedisSecret = argocdredis.DefaultSecret

// unreachableBackoff is how long reads fail at once after Redis could not be reached.
const unreachableBackoff = 30 * time.Second

// Trees reads Argo CD's resource tree of an Application (per-resource health and
// children, what `argocd app resources` shows) from the Redis Argo CD keeps it in, with
// Argo CD's own cache client. It reads only when asked, which the report controller and
// the resource tree controller (pkg/spoke/reports) do when an Application changes: Argo CD writes the tree before it updates the
// Application's status, so the status change that follows a health change brings the
// read. It connects with the password of Argo CD's argocd-redis Secret, read again when
// Redis refuses it.
//
// It follows whether reads work, for the agent's ManagedClusterAddOn condition
// ResourceTreeReadable, and when reads work again after failing, it asks the report
// controller (Retries) to read again the trees of the Applications whose reads failed.
type Trees struct {
	secrets     client.Reader
	namespace   string
	secretName  string
	address     string
	compression cacheutil.RedisCompressionType

	mu     sync.Mutex
	cache  *appstate.Cache
	closer func() error
	// lastErr is the error of the last read, nil when it worked; read says whether a
	// read happened at all (no condition before).
	lastErr error
	read    bool
	// failed are the Applications whose last read failed.
	failed map[types.NamespacedName]bool
	// unreachableUntil: Redis could not be reached; reads fail at once until then.
	unreachableUntil time.Time
	now              func() time.Time

	// changed gets an event when the condition changes (the environment controller
	// watches it); each of retries gets the Applications to read again once reads work
	// (one per controller that reads trees: the reports' and the trees').
	changed chan event.GenericEvent
	retries []chan event.GenericEvent
}

// NewTrees reads trees from Redis at address, with the password of the Secret secretName
// in namespace, Argo CD's namespace, read through secrets; compression is Argo CD's
// --redis-compress.
func NewTrees(secrets client.Reader, namespace, secretName, address string, compression cacheutil.RedisCompressionType) *Trees {
	return &Trees{
		secrets: secrets, namespace: namespace, secretName: secretName, address: address, compression: compression,
		failed:  map[types.NamespacedName]bool{},
		now:     time.Now,
		changed: make(chan event.GenericEvent, 1),
	}
}

// Tree returns app's resource tree, nil when Argo CD has none for it (yet) or it cannot
// be read; a read error is kept for the condition, not returned: the report goes out
// without the tree.
//
// After Redis could not be reached, reads fail at once with that error for
// unreachableBackoff: a Redis behind a dropping firewall would otherwise cost every
// reconcile the dial timeout and hold up every report behind it. The first read after
// that tries again (no timer: a change of some Application brings it), and when it works,
// the Applications whose reads failed are read again.
func (t *Trees) Tree(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.ApplicationTree {
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	if err := t.unreachable(); err != nil {
		t.record(key, err)
		return nil
	}
	tree, err := t.get(ctx, app)
	if err != nil && argocdredis.IsAuthError(err) {
		// The password may have changed: read the Secret again, once.
		t.reset()
		tree, err = t.get(ctx, app)
	}
	if err != nil && argocdredis.IsConnectionError(err) {
		t.mu.Lock()
		t.unreachableUntil = t.now().Add(unreachableBackoff)
		t.mu.Unlock()
	}
	t.record(key, err)
	if err != nil {
		return nil
	}
	return tree
}

func (t *Trees) get(ctx context.Context, app *argov1alpha1.Application) (*argov1alpha1.ApplicationTree, error) {
	c, err := t.client(ctx)
	if err != nil {
		return nil, err
	}
	// The key is the Application's instance name as the application controller that
	// reconciled it names it: "<namespace>_<name>" outside the controller's namespace.
	controllerNamespace := app.Status.ControllerNamespace
	if controllerNamespace == "" {
		controllerNamespace = t.namespace
	}
	tree := &argov1alpha1.ApplicationTree{}
	switch err := c.GetAppResourcesTree(app.InstanceName(controllerNamespace), tree); {
	case errors.Is(err, appstate.ErrCacheMiss):
		// Not computed yet (or expired): nothing to report, nothing wrong.
		return nil, nil
	case err != nil:
		// The same words for every Application: the condition quotes it, and changes only
		// when the cause does.
		return nil, fmt.Errorf("reading from Redis at %s: %w", t.address, err)
	}
	return tree, nil
}

// client is Argo CD's cache client on its Redis, made on first use with the password of
// the Secret.
func (t *Trees) client(ctx context.Context) (*appstate.Cache, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache != nil {
		return t.cache, nil
	}
	password, err := argocdredis.ReadPassword(ctx, t.secrets, types.NamespacedName{Namespace: t.namespace, Name: t.secretName})
	if err != nil {
		return nil, err
	}
	// The expiration only matters for writes, which the agent never does.
	t.cache, t.closer = argocdredis.NewCache(t.address, password, t.compression, 0, nil)
	return t.cache, nil
}

// reset drops the client, so the next read reads the Secret again.
func (t *Trees) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closer != nil {
		_ = t.closer()
	}
	t.cache, t.closer = nil, nil
}

// Close releases the Redis connections.
func (t *Trees) Close() {
	t.reset()
}

// unreachable is the last error while Redis is considered unreachable, nil otherwise.
func (t *Trees) unreachable() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastErr != nil && t.now().Before(t.unreachableUntil) {
		return t.lastErr
	}
	return nil
}

// record keeps how the read of key went; it signals a changed condition, and the
// Applications to read again when a read works after others failed.
func (t *Trees) record(key types.NamespacedName, err error) {
	t.mu.Lock()
	before := t.conditionLocked()
	t.read = true
	t.lastErr = err
	var again []types.NamespacedName
	if err != nil {
		t.failed[key] = true
	} else {
		delete(t.failed, key)
		for k := range t.failed {
			again = append(again, k)
		}
		clear(t.failed)
	}
	after := t.conditionLocked()
	retries := t.retries
	t.mu.Unlock()
	signalChange(t.changed, before, after)
	if len(again) > 0 {
		// Off the reconciler's goroutine: the controllers drain their channels.
		go func() {
			for _, k := range again {
				for _, retry := range retries {
					retry <- event.GenericEvent{Object: &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}
				}
			}
		}()
	}
}

// Forget drops key, an Application deleted or no longer reported.
func (t *Trees) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failed, key)
}

// Condition is the ResourceTreeReadable condition; nil before any read.
func (t *Trees) Condition() *metav1.Condition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conditionLocked()
}

// Changed gets an event when the condition changes (the environment controller watches it).
func (t *Trees) Changed() <-chan event.GenericEvent { return t.changed }

// Retries is a new channel that gets the Applications whose trees to read again, once
// reads work again after theirs failed; each controller that reads trees (the reports',
// the trees') watches one of its own.
func (t *Trees) Retries() <-chan event.GenericEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	retry := make(chan event.GenericEvent, 64)
	t.retries = append(t.retries, retry)
	return retry
}

func (t *Trees) conditionLocked() *metav1.Condition {
	if !t.read {
		return nil
	}
	return resourceTreeReadableCondition(t.address, t.lastErr)
}

// resourceTreeReadableCondition is the ManagedClusterAddOn condition for the last tree
// read, against Redis at address; err is its error.
func resourceTreeReadableCondition(address string, err error) *metav1.Condition {
	cond := &metav1.Condition{Type: apps.ConditionResourceTreeReadable}
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, apps.ReasonResourceTreeUnreadable
		cond.Message = fmt.Sprintf("Cannot read Argo CD's resource tree: %v. Reports are written without per-resource "+
			"health (resourceHealthSource: appTree) until it can be read.", err)
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, apps.ReasonResourceTreeRead
	cond.Message = fmt.Sprintf("Reading per-resource health and children from Argo CD's resource tree in Redis at %s "+
		"(resourceHealthSource: redisTree).", address)
	return cond
}
