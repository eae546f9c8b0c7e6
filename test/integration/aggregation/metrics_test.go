package aggregation_test

import (
	"context"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// The hub's metrics of reports and fleet state (docs/metrics.md).
const (
	reportFreshness = "argocd_pull_report_freshness_seconds"
	reportsTotal    = "argocd_pull_applicationset_reports_total"
	clustersGauge   = "argocd_pull_clusters"
	appsGauge       = "argocd_pull_applications"
	conditionsGauge = "argocd_pull_applications_with_condition"
)

func gatherMetrics() framework.Metrics {
	GinkgoHelper()
	m, err := framework.GatherMetrics()
	Expect(err).NotTo(HaveOccurred())
	return m
}

func freshnessCount() uint64 { return gatherMetrics().HistogramCount(reportFreshness) }

func reports(result string) func() float64 {
	return func() float64 { return gatherMetrics().Value(reportsTotal, "result", result) }
}

func clusters(agent string) func() float64 {
	return func() float64 { return gatherMetrics().Value(clustersGauge, "agent", agent) }
}

func applications(sync, health string) func() float64 {
	return func() float64 { return gatherMetrics().Value(appsGauge, "sync_status", sync, "health_status", health) }
}

func withCondition(condition argov1alpha1.ApplicationConditionType) func() float64 {
	return func() float64 { return gatherMetrics().Value(conditionsGauge, "condition", string(condition)) }
}

// setConditions replaces the conditions of the hub Application (Argo CD's CRD has no
// status subresource).
func setConditions(ctx context.Context, app *argov1alpha1.Application, conditions ...argov1alpha1.ApplicationCondition) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &argov1alpha1.Application{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
		cur.Status.Conditions = conditions
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// registerCluster adds the ManagedCluster to a cluster namespace newCluster made.
func registerCluster(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
}

var _ = Describe("Hub metrics", func() {
	It("counts report writes and skips, and times each agent report change until a report write carries it", func(ctx context.Context) {
		created, updated, skipped, freshness := reports("created")(), reports("updated")(), reports("skipped")(), freshnessCount()
		sumBefore, started := gatherMetrics().HistogramSum(reportFreshness), time.Now()
		c1 := newCluster(ctx)
		appSet := createApplicationSet(ctx, "metrics-"+c1)
		app := createApplication(ctx, c1+"-metrics", c1, appSet)
		mw := createManifestWork(ctx, app)
		observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))
		setFeedback(ctx, mw, healthy, "")
		writeReport(ctx, healthyReport(app, observed))
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.ClusterConditions).To(ConsistOf(HaveField("SyncRevision", "8f3c2b1")))
		}).Should(Succeed())
		Eventually(reports("created")).Should(Equal(created + 1))
		Eventually(freshnessCount).Should(Equal(freshness+1), "the agent's report is timed once a report write carries it")
		Consistently(freshnessCount, "2s").Should(Equal(freshness + 1))
		updatedSettled := reports("updated")()
		Expect(updatedSettled).To(BeNumerically(">=", updated))

		By("an input that leaves the report as it was is a skip, and no report change is timed")
		skippedSettled := reports("skipped")()
		setAgentAvailable(ctx, c1, metav1.ConditionTrue, metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)))
		Eventually(reports("skipped")).Should(BeNumerically(">", skippedSettled))
		Expect(skippedSettled).To(BeNumerically(">=", skipped))
		Consistently(reports("updated"), "2s").Should(Equal(updatedSettled))
		Expect(freshnessCount()).To(Equal(freshness + 1))

		By("an agent report change is one update, timed")
		changed := healthyReport(app, metav1.NewTime(observed.Add(time.Minute)))
		changed.Status.Health.Status = appsv1alpha1.HealthStatusProgressing
		writeReport(ctx, changed)
		Eventually(reports("updated")).Should(Equal(updatedSettled + 1))
		Eventually(freshnessCount).Should(Equal(freshness + 2))
		GinkgoWriter.Printf("report freshness: %.1f ms on average over the 2 report changes timed\n",
			(gatherMetrics().HistogramSum(reportFreshness)-sumBefore)/2*1000)
		Expect(gatherMetrics().HistogramSum(reportFreshness)-sumBefore).To(And(BeNumerically(">", 0),
			BeNumerically("<=", time.Since(started).Seconds())), "the two waits took some time, no longer than the spec has run")
	})

	It("counts ManagedClusters by their agent's availability", func(ctx context.Context) {
		available, unavailable, notEnabled := clusters("available")(), clusters("unavailable")(), clusters("not-enabled")()
		withAgent := newCluster(ctx)
		registerCluster(ctx, withAgent)
		Eventually(clusters("available")).Should(Equal(available + 1))

		By("the agent stops renewing its lease")
		setAgentAvailable(ctx, withAgent, metav1.ConditionFalse, metav1.Now())
		Eventually(clusters("unavailable")).Should(Equal(unavailable + 1))
		Expect(clusters("available")()).To(Equal(available))

		By("a cluster without the addon")
		bare := newCluster(ctx)
		registerCluster(ctx, bare+"-bare")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bare + "-bare"}})).To(Succeed())
		Eventually(clusters("not-enabled")).Should(Equal(notEnabled + 1))
	})

	It("counts pulled hub Applications by the sync and health status mirrored from their cluster", func(ctx context.Context) {
		syncedHealthy := applications("Synced", "Healthy")()
		c1 := newCluster(ctx)
		app := createApplication(ctx, c1+"-counted", c1, nil)
		Eventually(applications("Unknown", "Unknown")).Should(BeNumerically(">=", 1), "not reported yet")
		mw := createManifestWork(ctx, app)
		setFeedback(ctx, mw, healthy, "")
		Eventually(applications("Synced", "Healthy")).Should(Equal(syncedHealthy + 1))
	})

	It("counts pulled hub Applications by the conditions the hub's controllers set, not the cluster's", func(ctx context.Context) {
		held, deliveryErrors := withCondition(pullmodel.ConditionInvalidSpec)(), withCondition(pullmodel.ConditionDeliveryError)()
		c1 := newCluster(ctx)
		spokes := createApplication(ctx, c1+"-spoke-condition", c1, nil)
		hubs := createApplication(ctx, c1+"-hub-condition", c1, nil)
		// The cluster's Argo CD's own InvalidSpecError, mirrored: not a delivery the hub holds.
		setConditions(ctx, spokes, argov1alpha1.ApplicationCondition{Type: pullmodel.ConditionInvalidSpec, Message: "spec.source.path is invalid"})
		setConditions(ctx, hubs, pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, "the AppProject does not permit the cluster"),
			pullmodel.HubCondition(pullmodel.ConditionDeliveryError, "the ManifestWork is too large"))
		Eventually(withCondition(pullmodel.ConditionInvalidSpec)).Should(Equal(held + 1))
		Eventually(withCondition(pullmodel.ConditionDeliveryError)).Should(Equal(deliveryErrors + 1))
		Consistently(withCondition(pullmodel.ConditionInvalidSpec), "2s").Should(Equal(held + 1))
		Expect(gatherMetrics()[conditionsGauge].GetMetric()).To(HaveLen(len(pullmodel.PropagationConditionTypes)+len(pullmodel.AppStatusConditionTypes)),
			"every hub condition type, those no Application holds at 0")

		By("the condition cleared, the Application no longer counts")
		setConditions(ctx, hubs)
		Eventually(withCondition(pullmodel.ConditionInvalidSpec)).Should(Equal(held))
		Eventually(withCondition(pullmodel.ConditionDeliveryError)).Should(Equal(deliveryErrors))
	})
})
