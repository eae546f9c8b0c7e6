package aggregation_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/aggregation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	writes    = framework.NewRequestCounter()
	stopMgr   func() error
)

func TestAggregation(t *testing.T) {
	suite.Run(t, "Aggregation and full hub Application status on a real kube-apiserver",
		suite.EventuallyDefaults(20*time.Second, 100*time.Millisecond),
		suite.ConsistentlyDefaults(3*time.Second, 100*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	// The manager counts its writes to MulticlusterApplicationSetReports and Applications,
	// so tests can prove that unchanged input causes none. Its cache is configured as the
	// binary's (pkg/hub/manager).
	cfg := writes.Wrap(apiServer.Config)
	stopMgr, err = framework.RunManager(cfg, scheme, func(mgr ctrl.Manager) error {
		return framework.SetupHubControllers(mgr, appstatus.ControllerName, aggregation.ControllerName)
	})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		Expect(stopMgr()).To(Succeed())
	}
	if apiServer != nil {
		Expect(apiServer.Stop()).To(Succeed())
	}
})
