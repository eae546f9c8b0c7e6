package gitopscluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	stopMgr   context.CancelFunc
	mgrDone   chan error
)

func TestGitOpsCluster(t *testing.T) {
	suite.Run(t, "GitOpsCluster controller on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	// The controller runs in a real manager configured like the binary's.
	mgr, err := ctrl.NewManager(apiServer.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:              newCountingClient,
		Logger:                 recordingLogger(GinkgoLogr),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(gitopscluster.Setup(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone, "30s").Should(Receive(BeNil()))
	}
	Expect(apiServer.Stop()).To(Succeed())
})
