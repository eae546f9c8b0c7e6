package appstatus_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

// reportGracePeriod is the manager's --agent-report-grace-period here.
const reportGracePeriod = 3 * time.Second

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	writes    = framework.NewRequestCounter()
	stopMgr   func() error
)

func TestAppStatus(t *testing.T) {
	suite.Run(t, "Application status controller on a real kube-apiserver",
		suite.EventuallyDefaults(20*time.Second, 100*time.Millisecond),
		suite.ConsistentlyDefaults(3*time.Second, 100*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	// The manager talks to the API server through a transport that counts its writes to
	// Applications, so tests can prove that unchanged feedback causes none.
	cfg := writes.Wrap(apiServer.Config)
	// A short grace period: specs see NotReportedError come without waiting a minute.
	opts := manager.DefaultControllerOptions()
	opts.AppStatus.ReportGracePeriod = reportGracePeriod
	stopMgr, err = framework.RunManager(cfg, scheme, func(mgr ctrl.Manager) error {
		return manager.SetupControllersWith(mgr, opts, appstatus.ControllerName)
	})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		Expect(stopMgr()).To(Succeed())
	}
	Expect(apiServer.Stop()).To(Succeed())
})
