package fleet

import (
	"flag"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

// TestFleet is the package's one Ginkgo entry point (Ginkgo allows a single RunSpecs per
// test binary): every fleet spec, OCM's smoke test and the Argo CD and end-to-end ones,
// registers with it. Select them with labels, e.g. -ginkgo.label-filter=ocm.
func TestFleet(t *testing.T) {
	suite.Run(t, "Fleet: a hub and managed clusters joined with real OCM")
}

var _ = BeforeSuite(func() {
	// OCM's controllers log through klog at V(0) on every join and apply, and errors of
	// routine conflicts; keep all of it in the spec output, shown on failure or with
	// -ginkgo.v, instead of the test's stderr.
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	Expect(flags.Set("logtostderr", "false")).To(Succeed())
	Expect(flags.Set("stderrthreshold", "FATAL")).To(Succeed())
	klog.SetOutput(GinkgoWriter)
})
