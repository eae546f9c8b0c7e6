package process_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer  *framework.APIServer
	binary     string
	kubeconfig string
)

func TestProcess(t *testing.T) {
	suite.Run(t, "argocd-pull-addon processes on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	root, err := framework.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	binary = filepath.Join(dir, "argocd-pull-addon")
	build := exec.Command("go", "build", "-o", binary, "./cmd/argocd-pull-addon")
	build.Dir = root
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed())

	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	admin, err := apiServer.Env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	data, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, data, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(apiServer.Stop()).To(Succeed())
})
