package report_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	k8s       client.Client
	// kubeconfig is the API server's admin kubeconfig, as a user's file.
	kubeconfig string
)

func TestReportCommand(t *testing.T) {
	suite.Run(t, "The report command on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	k8s = apiServer.Client
	dir, err := os.MkdirTemp("", "report-command-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, apiServer.Env.KubeConfig, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(apiServer.Stop()).To(Succeed())
})
