// Package chartlifecycle_test installs, upgrades and uninstalls the hub chart with the Helm
// SDK (what the helm CLI runs) on a real kube-apiserver: an upgrade from the previous
// released chart (testdata) and an uninstall with GitOpsClusters and pulled Applications
// left behind.
package chartlifecycle_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	k8s       client.Client
	// helmConfig is Helm's action configuration for the test API server, as the helm CLI
	// builds it from a kubeconfig, storing releases in Secrets (Helm's default driver).
	helmConfig *action.Configuration
	// kubeconfig is the admin kubeconfig of the test API server.
	kubeconfig string
)

func TestChartLifecycle(t *testing.T) {
	suite.Run(t, "The hub chart upgrades from the previous version and uninstalls with the Helm SDK")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	// Our CRDs are the chart's to install: Helm refuses to take over objects it did not create.
	apiServer, err = framework.StartAPIServerWith(framework.APIServerOptions{WithoutPullAddonCRDs: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(apiServer.Stop()).To(Succeed()) })
	// The framework's scheme and apiextensions, to read the CRDs Helm writes.
	Expect(apiextensionsv1.AddToScheme(apiServer.Scheme)).To(Succeed())
	k8s, err = client.New(apiServer.Config, client.Options{Scheme: apiServer.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: framework.ChartNamespace}})).To(Succeed())

	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, apiServer.Env.KubeConfig, 0o600)).To(Succeed())
	flags := genericclioptions.NewConfigFlags(false)
	ns := framework.ChartNamespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	helmConfig = new(action.Configuration)
	Expect(helmConfig.Init(flags, ns, "secret", func(format string, v ...any) {
		GinkgoWriter.Printf("helm: "+format+"\n", v...)
	})).To(Succeed())
})
