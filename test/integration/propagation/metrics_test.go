package propagation_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const propagationLatency = "argocd_pull_propagation_latency_seconds"

// gatherMetrics reads the registry the manager serves on /metrics.
func gatherMetrics() framework.Metrics {
	GinkgoHelper()
	m, err := framework.GatherMetrics()
	Expect(err).NotTo(HaveOccurred())
	return m
}

// latencyCount is how many Application changes the propagation latency has timed.
func latencyCount() uint64 {
	return gatherMetrics().HistogramCount(propagationLatency)
}

var _ = Describe("Propagation metrics", func() {
	It("times each Application change a ManifestWork write carries, and no other", func(ctx context.Context) {
		before, sumBefore := latencyCount(), gatherMetrics().HistogramSum(propagationLatency)
		started := time.Now()
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("timed").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		Eventually(latencyCount).Should(Equal(before+1), "the creation is timed once the ManifestWork is written")
		Expect(gatherMetrics().HistogramSum(propagationLatency)-sumBefore).To(
			BeNumerically("<=", time.Since(started).Seconds()), "no longer than the spec has run")

		By("a status change needs no ManifestWork write and is not timed")
		got := getApp(ctx, app)
		got.Status.Health.Status = "Healthy"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Consistently(latencyCount, "2s", "100ms").Should(Equal(before + 1))

		By("a spec change is timed when the ManifestWork carrying it is written")
		got = getApp(ctx, app)
		got.Spec.Source.TargetRevision = "v3"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		expectWorkAt(ctx, client.ObjectKeyFromObject(w), "v3")
		Eventually(latencyCount).Should(Equal(before + 2))
		Consistently(latencyCount, "1s", "100ms").Should(Equal(before + 2))
		GinkgoWriter.Printf("propagation latency: %.1f ms on average over the 2 changes timed\n",
			(gatherMetrics().HistogramSum(propagationLatency)-sumBefore)/2*1000)
	})
})
