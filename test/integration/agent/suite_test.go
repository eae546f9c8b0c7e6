package agent_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

// The hub and the managed cluster are two API servers; the agent under test runs in this
// process against both. The managed cluster starts without Argo CD: the first specs
// install it. Its hub traffic goes through hubProxy (so a spec can cut it) and is counted.
var (
	hubServer, managedServer *framework.APIServer
	hub, managed             client.Client
	hubProxy                 *framework.TCPProxy
	writes                   = framework.NewRequestCounter()
	// managedWrites counts the agent under test's writes to the managed cluster.
	managedWrites = framework.NewRequestCounter()
	theAgent      *runningAgent
	ctx           = context.Background()
	// argoRedis is the managed cluster's Argo CD Redis, where the agent reads resource
	// trees; its password goes into the argocd-redis Secret by resourceTreeSpecs.
	argoRedis *framework.RedisServer
)

func TestAgent(t *testing.T) {
	suite.Run(t, "Agent against a real hub and a real managed-cluster kube-apiserver",
		suite.EventuallyDefaults(30*time.Second, 100*time.Millisecond),
		suite.ConsistentlyDefaults(3*time.Second, 100*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	hubServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	managedServer, err = framework.StartAPIServerWith(framework.APIServerOptions{WithoutArgoCD: true})
	Expect(err).NotTo(HaveOccurred())
	hub, managed = hubServer.Client, managedServer.Client

	Expect(hub.Create(ctx, namespace(clusterName))).To(Succeed())
	Expect(hub.Create(ctx, managedClusterAddOn())).To(Succeed())
	Expect(managed.Create(ctx, namespace(argoNamespace))).To(Succeed())
	Expect(managed.Create(ctx, namespace(addonNamespace))).To(Succeed())

	GinkgoWriter.Println("hub at", hubServer.Config.Host)
	target, err := hostPort(hubServer.Config)
	Expect(err).NotTo(HaveOccurred())
	hubProxy, err = framework.StartTCPProxy(target)
	Expect(err).NotTo(HaveOccurred())
	argoRedis, err = framework.StartRedisServer(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	redisPassword = argoRedis.Password
	theAgent = startAgent(agentAgainstProxy)
})

// agentAgainstProxy configures the agent under test: hub through the proxy, writes counted.
// Its reconnect jitter is a second, shorter than the report's own backoff after the four
// failed writes of the reconnect spec (8 s or more), so that spec sees the reconnect retry.
func agentAgainstProxy(o *agent.Options) {
	o.HubReconnectJitter = time.Second
	o.HubConfig = writes.Wrap(viaProxy(hubServer.Config, hubProxy))
	o.ManagedConfig = managedWrites.Wrap(managedServer.Config)
	o.RedisAddress = argoRedis.Addr
	o.ResourceTreeInterval = suiteTreeInterval
}

var _ = AfterSuite(func() {
	if theAgent != nil {
		Expect(theAgent.stop()).To(Succeed())
	}
	if hubProxy != nil {
		hubProxy.Close()
	}
	Expect(argoRedis.Stop()).To(Succeed())
	Expect(managedServer.Stop()).To(Succeed())
	Expect(hubServer.Stop()).To(Succeed())
})
