package propagation_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	// writes counts what the controller's client sends (not its Events).
	writes = framework.NewRequestCounter()
	// started counts the controller's reconciles per Application.
	started = framework.NewReconcileCounter()
	stopMgr func()
)

func TestPropagation(t *testing.T) {
	// Consistently polls at Gomega's default 10ms, as this suite's specs always have: the
	// finer polling catches a ManifestWork that exists only briefly.
	suite.Run(t, "Propagation on a real kube-apiserver",
		suite.EventuallyDefaults(30*time.Second, 100*time.Millisecond),
		suite.ConsistentlyDefaults(2*time.Second, 10*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client
	// The specs deliver from Argo CD's namespace to any cluster, as on a hub with one team;
	// tenancy_test.go narrows what other namespaces may do.
	Expect(framework.AllowEveryDelivery(context.Background(), k8s, appNamespace)).To(Succeed())
	stopMgr = startManager()
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
	}
	Expect(apiServer.Stop()).To(Succeed())
})

// startManager runs the propagation controller on a manager configured like the
// binary's (managed fields stripped, only pull-model ManifestWorks cached), its writes
// counted, and returns a function that stops it and waits until it has.
func startManager() func() {
	GinkgoHelper()
	stop, err := framework.RunManager(apiServer.Config, scheme, func(mgr ctrl.Manager) error {
		return framework.SetupHubControllers(mgr, propagation.ControllerName)
	}, framework.WithNewClient(writes.NewClient), framework.WithLogger(started.Logger(GinkgoLogr)))
	Expect(err).NotTo(HaveOccurred())
	return func() {
		GinkgoHelper()
		Expect(stop()).To(Succeed())
	}
}
