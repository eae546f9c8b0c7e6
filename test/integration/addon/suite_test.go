package addon_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/openshift/library-go/pkg/controller/controllercmd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ocmaddon "open-cluster-management.io/ocm/pkg/addon"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	// audit records the addon manager's requests.
	audit     *framework.AuditLog
	apiServer *framework.APIServer
	scheme    *runtime.Scheme
	k8s       client.Client
	stop      context.CancelFunc
	mgrDone   chan error
	ocmDone   chan error
	// renders is the addon manager's cache of rendered agents.
	renders *addon.RenderCache
)

func TestAddon(t *testing.T) {
	suite.Run(t, "argocd-pull addon manager on a real kube-apiserver with OCM's addon-manager")
}

var _ = BeforeSuite(func() {
	var err error
	// The addon manager's requests, to fail the suite on any the chart's RBAC refuses.
	auditDir, err := os.MkdirTemp("", "addon-audit-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, auditDir)
	audit = framework.NewAuditLog(auditDir, managerUser)
	audit.LogEveryone = true // it impersonates managerUser
	apiServer, err = framework.StartAPIServerWith(framework.APIServerOptions{Audit: audit})
	Expect(err).NotTo(HaveOccurred())
	scheme, k8s = apiServer.Scheme, apiServer.Client

	ctx, cancel := context.WithCancel(context.Background())
	stop = cancel

	// OCM's own addon-manager, as on a real hub: it owns ManagedClusterAddOns by their
	// ClusterManagementAddOn and resolves their AddOnDeploymentConfigs into
	// status.configReferences, which the addon-framework manager waits for.
	ocmDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		ocmDone <- ocmaddon.RunManager(ctx, &controllercmd.ControllerContext{KubeConfig: apiServer.Config})
	}()

	// The chart's addon templates: the ClusterManagementAddOn, and the manager's hub RBAC,
	// which the addon manager below runs with instead of the admin's rights.
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}})).To(Succeed())
	chartObjects, err := renderAddonTemplates(nil)
	Expect(err).NotTo(HaveOccurred())
	// And the chart's admission policy on the agents' reports, as on a hub the chart installed.
	policyObjects, err := renderAgentReportPolicy()
	Expect(err).NotTo(HaveOccurred())
	chartObjects = append(chartObjects, policyObjects...)
	for _, obj := range chartObjects {
		Expect(k8s.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
	}
	managerConfig := rest.CopyConfig(apiServer.Config)
	managerConfig.Impersonate = rest.ImpersonationConfig{
		UserName: managerUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace, "system:authenticated"},
	}

	// Our addon manager, added to a controller-runtime manager the way the binary does.
	mgr, err := ctrl.NewManager(managerConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	opts := addon.NewOptions()
	opts.AgentImage = testAgentImage
	opts.AgentImagePullSecrets = []string{testPullSecret}
	opts.AgentReportQuota = reportQuota
	renders, err = addon.Setup(mgr, opts)
	Expect(err).NotTo(HaveOccurred())
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- mgr.Start(ctx)
	}()
})

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
		Eventually(mgrDone, "30s").Should(Receive(BeNil()))
		Eventually(ocmDone, "30s").Should(Receive(BeNil()))
	}
	refused, err := audit.RefusedRequests()
	Expect(err).NotTo(HaveOccurred())
	Expect(apiServer.Stop()).To(Succeed())
	Expect(refused).To(BeEmpty(), "requests of the addon manager the API server refused under the chart's RBAC")
})
