package agent_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
)

// hubBudgetSpecs: the agent's hub budget (--hub-kube-api-qps, --hub-kube-api-burst) holds
// every request it sends the hub, and an agent given a small one still reports. The
// agent reads its hub kubeconfig from files, as in a Pod: the budget applies to the hub
// configuration the agent builds itself. They run inside the suite's Ordered container,
// with Argo CD installed; the suite's agent is restored afterwards.
func hubBudgetSpecs() {
	It("still reports every Application with a hub budget of one request a second", func() {
		Expect(theAgent.stop()).To(Succeed())
		kubeconfig, err := writeKubeconfig(GinkgoT().TempDir(), viaProxy(hubServer.Config, hubProxy))
		Expect(err).NotTo(HaveOccurred())
		theAgent = startAgent(func(o *agent.Options) {
			o.HubKubeconfig = kubeconfig
			o.ManagedConfig = rest.CopyConfig(managedServer.Config)
			o.RedisAddress = argoRedis.Addr
			o.HubQPS, o.HubBurst = 1, 1
		})
		DeferCleanup(func() {
			Expect(theAgent.stop()).To(Succeed())
			theAgent = startAgent(agentAgainstProxy)
		})
		// The agent has started and written once: what follows is its budget at work, not
		// its start-up.
		createApplication(pulledApp(argoNamespace, "budget-first").Build(), syncedHealthy("r1"))
		Eventually(reportOf(argoNamespace, "budget-first"), 2*time.Minute).Should(HaveField("Status.Sync.Revision", "r1"))

		const apps = 5
		created := time.Now()
		for i := range apps {
			createApplication(pulledApp(argoNamespace, fmt.Sprintf("budget-%d", i)).Build(), syncedHealthy("r1"))
		}
		for i := range apps {
			Eventually(reportOf(argoNamespace, fmt.Sprintf("budget-%d", i)), 2*time.Minute).Should(HaveField("Status.Sync.Revision", "r1"))
		}
		// Five writes with one request a second and a burst of one take four seconds at
		// least, however fast the machine; without the budget they follow the coalescing
		// window (a second) at once. A lower bound the token bucket guarantees, not a figure.
		Expect(time.Since(created)).To(BeNumerically(">=", (apps-1)*time.Second), "the five report writes kept to one request a second")
	})
}
