package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	k8s       client.Client
	rendered  []*unstructured.Unstructured
	stopMgr   context.CancelFunc
	// kcm aggregates ClusterRoles, as on every cluster: view, edit and admin take in the
	// chart's tenant roles.
	kcm     *framework.ControllerManager
	mgrDone chan error
	// audit records the manager's requests: any the API server refuses fails the suite.
	audit *framework.AuditLog
)

func TestChart(t *testing.T) {
	suite.Run(t, "The hub chart, installed on a real kube-apiserver, runs the manager")
}

// managerCommand is the binary's manager command: its own flags and, once parsing merges
// them in, those every command takes (--logging-format, --v), which the chart passes too.
func managerCommand() *cobra.Command {
	GinkgoHelper()
	cmd, _, err := cli.NewRootCommand().Find([]string{"manager"})
	Expect(err).NotTo(HaveOccurred())
	return cmd
}

// serviceAccountUser is who the manager is when it runs with the chart's ServiceAccount.
var serviceAccountUser = "system:serviceaccount:" + framework.ChartNamespace + ":" + framework.ChartName + "-manager"

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	audit = framework.NewAuditLog(suiteDir(), serviceAccountUser)
	// The manager impersonates the ServiceAccount, which the API server learns only after
	// its audit policy has matched the request: log everyone's.
	audit.LogEveryone = true
	apiServer, err = framework.StartAPIServerWith(framework.APIServerOptions{Audit: audit})
	Expect(err).NotTo(HaveOccurred())
	k8s = apiServer.Client
	kcmDir := suiteDir()
	adminKubeconfig := filepath.Join(kcmDir, "admin.kubeconfig")
	Expect(os.WriteFile(adminKubeconfig, apiServer.Env.KubeConfig, 0o600)).To(Succeed())
	kcm, err = framework.StartControllerManager(framework.ControllerManagerOptions{Kubeconfig: adminKubeconfig,
		Controllers: []string{"clusterrole-aggregation"}, LogFile: filepath.Join(kcmDir, "kube-controller-manager.log")})
	Expect(err).NotTo(HaveOccurred())

	By("installing the chart's templates as `helm install` renders them")
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: framework.ChartNamespace}})).To(Succeed())
	rendered, err = framework.RenderChart(framework.ChartNamespace, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(framework.CreateObjects(ctx, k8s, rendered)).To(Succeed())

	By("running the manager's own Run with the ServiceAccount's identity and the chart's RBAC")
	kubeconfig := writeImpersonatingKubeconfig(serviceAccountUser,
		"system:serviceaccounts", "system:serviceaccounts:"+framework.ChartNamespace, "system:authenticated")
	o := manager.NewOptions()
	// The chart's own arguments (--gitopscluster-argocd-namespaces among them, and the
	// flags of every command), then the test's.
	flags := &cobra.Command{}
	o.AddFlags(flags)
	flags.Flags().AddFlagSet(cli.NewRootCommand().PersistentFlags())
	Expect(flags.Flags().Parse(deploymentOf(rendered).Spec.Template.Spec.Containers[0].Args[1:])).To(Succeed())
	o.Endpoints.Kubeconfig = kubeconfig
	o.Endpoints.MetricsAddr, o.Endpoints.ProbeAddr = "0", "0"
	o.LeaderElect, o.LeaderElectionNamespace = true, framework.ChartNamespace
	mctx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	mgrDone = make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		mgrDone <- o.Run(mctx)
	}()
})

var _ = AfterSuite(func() {
	if stopMgr != nil {
		stopMgr()
		Eventually(mgrDone, "30s").Should(Receive(BeNil()))
	}
	// Every request of the manager's, whatever spec caused it: one the chart's RBAC does
	// not allow is a bug even when the manager retries and a spec still passes.
	refused, err := audit.RefusedRequests()
	Expect(err).NotTo(HaveOccurred())
	if kcm != nil {
		Expect(kcm.Stop()).To(Succeed())
	}
	Expect(apiServer.Stop()).To(Succeed())
	Expect(refused).To(BeEmpty(), "requests of the manager the API server refused under the chart's RBAC")
})

// suiteDir is a directory for the whole suite: the API server's audit log,
// kube-controller-manager's kubeconfig and log (GinkgoT().TempDir() is removed after the
// first spec that asks for it).
func suiteDir() string {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "chart-suite-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	return dir
}

// writeImpersonatingKubeconfig writes a kubeconfig for the test API server that acts as
// user with groups: the admin credentials, impersonating, so RBAC decides as for user.
func writeImpersonatingKubeconfig(user string, groups ...string) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(framework.WriteImpersonatingKubeconfig(apiServer.Config, path, user, groups...)).To(Succeed())
	return path
}
