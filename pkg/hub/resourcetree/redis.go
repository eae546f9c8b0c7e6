package resourcetree

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/argocdredis"
)

// keyExpiration is the lifetime of the tree keys the hub writes: in effect, none. Argo
// CD's own application controller rewrites the trees of the Applications it reconciles at
// every refresh, so it lets them expire (--app-state-cache-expiration, one hour). The hub
// writes a tree only when it changes, and must go on serving the last known tree of a
// cluster that stopped reporting for as long as that cluster is gone: an expiring key
// would empty the UI of a settled or offline Application after its lifetime, and a timer
// rewriting every tree to keep it alive would cost the API server and Redis a fleet's
// worth of trees each time. So the key stays until the controller deletes it, when the
// tree or the hub Application goes or the Application is no longer pulled to the tree's
// cluster. Argo CD's cache cannot say "no expiry": go-redis/cache turns 0 into one hour
// and does not write to Redis at all with a negative one (Item.ttl, Cache.set), so the
// lifetime is a century. What it costs: the key of an Application deleted while no
// manager ran stays (one tree, at most a few hundred KiB, until an Application of that
// name is pulled or reconciled by Argo CD again).
const keyExpiration = 100 * 365 * 24 * time.Hour

// store writes resource trees into the hub Argo CD's Redis with Argo CD's own cache
// client, connecting with the password of its argocd-redis Secret (none when that Secret
// does not exist), read again when Redis refuses it.
type store struct {
	secrets     client.Reader
	secret      types.NamespacedName
	address     string
	compression cacheutil.RedisCompressionType

	// restarted is called when a new connection finds another Redis server than the one
	// before (its run_id changed): Argo CD's Redis keeps nothing on disk, so every tree
	// written before is gone.
	restarted func()

	mu     sync.Mutex
	cache  *appstate.Cache
	closer func() error
	// runID is the run_id of the Redis server the last connection found.
	runID string
}

// set writes tree under Argo CD's key of the Application instanceName; a nil tree
// deletes it.
func (s *store) set(ctx context.Context, instanceName string, tree *argov1alpha1.ApplicationTree) error {
	c, err := s.client(ctx)
	if err != nil {
		return err
	}
	err = c.SetAppResourcesTree(instanceName, tree)
	if err != nil && argocdredis.IsAuthError(err) {
		// The password may have changed: read the Secret again, once.
		s.reset()
		if c, err = s.client(ctx); err != nil {
			return err
		}
		err = c.SetAppResourcesTree(instanceName, tree)
	}
	if err != nil {
		return fmt.Errorf("writing to the hub Argo CD's Redis at %s: %w", s.address, err)
	}
	return nil
}

// client is Argo CD's cache client on its Redis, made on first use.
func (s *store) client(ctx context.Context) (*appstate.Cache, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != nil {
		return s.cache, nil
	}
	password, err := argocdredis.ReadPassword(ctx, s.secrets, s.secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	// No Secret: a Redis without a password, as Argo CD's installation without auth runs it.
	s.cache, s.closer = argocdredis.NewCache(s.address, password, s.compression, keyExpiration, s.onConnect)
	return s.cache, nil
}

// onConnect notices a restarted Redis on each new connection: a restart drops every
// connection, so the first write after it connects anew. Never an error: the connection
// serves writes whether or not its server's run_id could be read.
func (s *store) onConnect(ctx context.Context, cn *redis.Conn) error {
	id := argocdredis.ServerRunID(ctx, cn)
	if id == "" {
		return nil
	}
	s.mu.Lock()
	before := s.runID
	s.runID = id
	s.mu.Unlock()
	if before != "" && before != id && s.restarted != nil {
		s.restarted()
	}
	return nil
}

// reset drops the client, so the next write reads the Secret again.
func (s *store) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closer != nil {
		_ = s.closer()
	}
	s.cache, s.closer = nil, nil
}
