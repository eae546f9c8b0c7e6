package appstatus_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	writes    = framework.NewWriteCounter()
	stopMgr   context.CancelFunc
	mgrDone   chan error
)

func TestAppStatus(t *testing.T) {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	RegisterFailHandler(Fail)
	RunSpecs(t, "Application status controller on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(GinkgoLogr)

	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	// The manager talks to the API server through a transport that counts its writes to
	// Applications, so tests can prove that unchanged feedback causes none.
	cfg := writes.Wrap(apiServer.Config)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  manager.CacheOptions(),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(appstatus.NewReconciler(mgr.GetClient(), mgr.GetAPIReader()).SetupWithManager(mgr)).To(Succeed())

	var ctx context.Context
	ctx, stopMgr = context.WithCancel(context.Background())
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone).Should(Receive(Not(HaveOccurred())))
	}
	Expect(apiServer.Stop()).To(Succeed())
})
