package propagation_test

import (
	"context"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
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

// reconcilesOf returns how many times the propagation controller has started reconciling
// app; other specs' Applications do not count.
func reconcilesOf(app *argov1alpha1.Application) func() int {
	return func() int { return started.Count(propagation.ControllerName, client.ObjectKeyFromObject(app)) }
}

// settledReconciles waits until the controller has stopped reconciling app for a moment
// and returns its count.
func settledReconciles(app *argov1alpha1.Application) int {
	GinkgoHelper()
	var n int
	Eventually(func() bool {
		n = reconcilesOf(app)()
		time.Sleep(700 * time.Millisecond)
		return reconcilesOf(app)() == n
	}).Should(BeTrue())
	return n
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

	It("reconciles on what it reads, not on the spoke's status mirrored onto the Application or its ManifestWork", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("quiet").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		base := settledReconciles(app)
		Expect(base).To(BeNumerically(">", 0), "the reconciles that wrote the ManifestWork are counted")

		By("the application status controller's mirror of two status changes (the API server moves the generation too)")
		for _, status := range []health.HealthStatusCode{health.HealthStatusProgressing, health.HealthStatusHealthy} {
			got := getApp(ctx, app)
			generation := got.Generation
			got.Status.Health.Status = status
			got.Status.Sync.Status = "Synced"
			Expect(k8s.Update(ctx, got)).To(Succeed())
			Expect(getApp(ctx, app).Generation).To(BeNumerically(">", generation),
				"Argo CD's Application CRD has no status subresource: a status write moves the generation")
		}
		By("the work agent's status update of the ManifestWork, acknowledging no request")
		Eventually(func(g Gomega) {
			cur := &workv1.ManifestWork{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
			meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
				Reason: "AppliedManifestWorkComplete", Message: "Apply manifest work complete"})
			g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Consistently(reconcilesOf(app), "2s", "100ms").Should(Equal(base))

		By("a change of what it reads (the spec) is reconciled")
		got := getApp(ctx, app)
		got.Spec.Source.TargetRevision = "v4"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		expectWorkAt(ctx, client.ObjectKeyFromObject(w), "v4")
		Expect(reconcilesOf(app)()).To(BeNumerically(">", base))
	})
})
