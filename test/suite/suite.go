// Package suite starts the project's Ginkgo suites. Every suite's Test function is one
// call, so the defaults below are set in one place instead of in each suite_test.go.
//
// It is a package of its own, not part of test/framework, because importing Ginkgo
// registers its -ginkgo.* flags on the process's flag set: the tools under hack/ import
// test/framework and must not show them.
package suite

import (
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Option changes a default of one suite.
type Option func()

// EventuallyDefaults sets the timeout and polling interval of every Eventually in the suite
// that does not set its own.
func EventuallyDefaults(timeout, polling time.Duration) Option {
	return func() {
		gomega.SetDefaultEventuallyTimeout(timeout)
		gomega.SetDefaultEventuallyPollingInterval(polling)
	}
}

// ConsistentlyDefaults sets the duration and polling interval of every Consistently in the
// suite that does not set its own.
func ConsistentlyDefaults(duration, polling time.Duration) Option {
	return func() {
		gomega.SetDefaultConsistentlyDuration(duration)
		gomega.SetDefaultConsistentlyPollingInterval(polling)
	}
}

// Run runs the package's specs as the suite description. Beyond Ginkgo's own defaults
// and the -ginkgo.* flags it:
//   - fails the suite on a pending spec (FailOnPending): a PIt or PDescribe left in would
//     otherwise pass unnoticed;
//   - fails the suite when no spec ran (FailOnEmpty): a focus or label filter that matches
//     nothing, or a suite whose specs were never registered, is not a pass;
//   - sends controller-runtime's log (the managers, envtest) to GinkgoWriter, so it is
//     shown with a failing spec or with -ginkgo.v and not otherwise.
func Run(t *testing.T, description string, opts ...Option) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	for _, o := range opts {
		o()
	}
	ctrl.SetLogger(ginkgo.GinkgoLogr)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.FailOnPending = true
	suiteConfig.FailOnEmpty = true
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
}
