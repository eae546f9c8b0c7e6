package gitopscluster_test

import (
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	// writes counts every write the controller's client sends to the API server, no-op
	// patches included (which a resourceVersion check cannot see).
	writes  = framework.NewRequestCounter()
	stopMgr func() error
)

func TestGitOpsCluster(t *testing.T) {
	suite.Run(t, "GitOpsCluster controller on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	startManager()
})

// startManager runs the controller in a real manager configured like the binary's; its
// client's writes are counted and its log records each reconcile.
func startManager() {
	GinkgoHelper()
	startManagerWith(manager.DefaultControllerOptions().GitOpsCluster)
}

// startManagerWith is startManager with the controller, and the manager's cache,
// configured by opts as the binary's flags would.
func startManagerWith(opts gitopscluster.Options) {
	GinkgoHelper()
	var err error
	controllers := manager.DefaultControllerOptions()
	controllers.GitOpsCluster = opts
	stopMgr, err = framework.RunManager(apiServer.Config, scheme, func(mgr ctrl.Manager) error {
		return manager.SetupControllersWith(mgr, controllers, gitopscluster.ControllerName)
	},
		framework.WithNewClient(writes.NewClient), framework.WithLogger(recordingLogger(GinkgoLogr)),
		framework.WithCache(manager.CacheOptionsFor(opts.ArgoNamespaces)))
	Expect(err).NotTo(HaveOccurred())
}

// stopManager stops the manager until the returned function starts a new one (also run
// at the end of the spec, should it fail before).
func stopManager() (start func()) {
	GinkgoHelper()
	Expect(stopMgr()).To(Succeed())
	stopMgr = nil
	start = func() {
		if stopMgr == nil {
			startManager()
		}
	}
	DeferCleanup(start)
	return start
}

var _ = AfterSuite(func() {
	if stopMgr != nil {
		Expect(stopMgr()).To(Succeed())
	}
	Expect(apiServer.Stop()).To(Succeed())
})
