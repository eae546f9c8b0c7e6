package resourcetree_test

import (
	"context"
	"testing"
	"time"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

// argoNamespace is the hub Argo CD's namespace (--argocd-namespace).
const argoNamespace = "argocd"

var (
	ctx       = context.Background()
	apiServer *framework.APIServer
	k8s       client.Client
	// requests counts what the manager asks the API server: the uncached GETs of trees.
	requests = framework.NewRequestCounter()
	// hubRedis is the hub Argo CD's Redis, with a password in the argocd-redis Secret;
	// the manager reaches it through redisLink, which a spec can cut.
	hubRedis  *framework.RedisServer
	redisLink *framework.TCPProxy
	// argoCache reads Redis as the hub's argocd-server does: Argo CD's own cache, gzip.
	argoCache   *appstate.Cache
	redisClient *redis.Client
	// redisPassword is the hub Redis' password now (a spec rotates it).
	redisPassword string
	// stopRestartedRedis stop the redis-servers a spec started in hubRedis' place.
	stopRestartedRedis []func()
	stopMgr            func() error
)

func TestResourceTree(t *testing.T) {
	suite.Run(t, "Resource tree controller on a real kube-apiserver and a real Redis",
		suite.EventuallyDefaults(30*time.Second, 100*time.Millisecond),
		suite.ConsistentlyDefaults(2*time.Second, 100*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	k8s = apiServer.Client

	hubRedis, err = framework.StartRedisServer(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	redisLink, err = framework.StartTCPProxy(hubRedis.Addr)
	Expect(err).NotTo(HaveOccurred())
	connectTestClients(hubRedis.Password)

	for _, ns := range []string{argoNamespace, "team-a", "c1", "c2"} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	// As Argo CD's installation keeps the password: Secret argocd-redis, key auth.
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "argocd-redis"},
		Data: map[string][]byte{"auth": []byte(hubRedis.Password)}})).To(Succeed())

	opts := manager.DefaultControllerOptions()
	opts.Propagation.Tenancy.ArgoCDNamespace = argoNamespace
	opts.ResourceTree.RedisAddress = redisLink.Addr()
	stopMgr, err = framework.RunManager(requests.Wrap(apiServer.Config), apiServer.Scheme, func(mgr ctrl.Manager) error {
		return manager.SetupControllersWith(mgr, opts, resourcetree.ControllerName)
	})
	Expect(err).NotTo(HaveOccurred())
})

// connectTestClients (re)connects the suite's own Redis clients with password.
func connectTestClients(password string) {
	if redisClient != nil {
		_ = redisClient.Close()
	}
	redisPassword = password
	redisClient = redis.NewClient(&redis.Options{Addr: hubRedis.Addr, Password: password})
	argoCache = appstate.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(redisClient, 0, cacheutil.RedisCompressionGZip)), 0)
}

var _ = AfterSuite(func() {
	if stopMgr != nil {
		Expect(stopMgr()).To(Succeed())
	}
	if redisLink != nil {
		redisLink.Close()
	}
	if redisClient != nil {
		_ = redisClient.Close()
	}
	for _, stop := range stopRestartedRedis {
		stop()
	}
	Expect(hubRedis.Stop()).To(Succeed())
	Expect(apiServer.Stop()).To(Succeed())
})
