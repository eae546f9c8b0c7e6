package examples_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

var (
	apiServer *framework.APIServer
	k8s       client.Client
)

func TestExamples(t *testing.T) {
	suite.Run(t, "The examples on a real kube-apiserver", suite.EventuallyDefaults(30*time.Second, 200*time.Millisecond))
}

var _ = BeforeSuite(func() {
	var err error
	apiServer, err = framework.StartAPIServer()
	Expect(err).NotTo(HaveOccurred())
	k8s = apiServer.Client
})

var _ = AfterSuite(func() {
	Expect(apiServer.Stop()).To(Succeed())
})
