//go:build e2e

package pull_test

import (
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// metricsSpecs read the metrics the manager and the agents serve over HTTP once the
// guestbook runs Healthy on both clusters (docs/metrics.md).
func metricsSpecs() {
	scrape := func(g Gomega, url string) framework.Metrics {
		m, err := framework.ScrapeMetrics(url)
		g.Expect(err).NotTo(HaveOccurred())
		return m
	}

	It("has the manager time deliveries and reports and count clusters and Applications", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			m, err := pull.ScrapeManagerMetrics()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.HistogramCount("argocd_pull_propagation_latency_seconds")).To(BeNumerically(">=", len(clusters)),
				"each cluster's hub Application was written into a ManifestWork")
			g.Expect(m.HistogramCount("argocd_pull_report_freshness_seconds")).To(BeNumerically(">=", len(clusters)),
				"each cluster's report reached the MulticlusterApplicationSetReport")
			g.Expect(m.Value("argocd_pull_applicationset_reports_total", "result", "created")).To(BeNumerically(">=", 1))
			g.Expect(m.Value("argocd_pull_applicationset_reports_total", "result", "updated")).To(BeNumerically(">=", 1))
			g.Expect(m.Value("argocd_pull_clusters", "agent", "available")).To(BeEquivalentTo(len(clusters)))
			g.Expect(m.Value("argocd_pull_clusters", "agent", "not-enabled")).To(BeEquivalentTo(1), hubRenderedCluster+" runs no agent")
			g.Expect(m.Value("argocd_pull_applications", "sync_status", "Synced", "health_status", "Healthy")).To(BeNumerically(">=", len(clusters)))

			mean := func(name string) string {
				return (time.Duration(m.HistogramSum(name) / float64(m.HistogramCount(name)) * float64(time.Second))).Round(time.Millisecond).String()
			}
			AddReportEntry("propagation latency (mean, manager's share)", mean("argocd_pull_propagation_latency_seconds"))
			AddReportEntry("report freshness (mean, manager's share)", mean("argocd_pull_report_freshness_seconds"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("answers the ServiceAccount the chart binds to its metrics reader over HTTPS with the build info, and refuses one it does not bind", func(ctx SpecContext) {
		By("the binding is the chart's, from metrics.reader.serviceAccount")
		binding := &rbacv1.ClusterRoleBinding{}
		Expect(hub.Get(ctx, client.ObjectKey{Name: framework.ChartName + "-metrics-reader"}, binding)).To(Succeed())
		Expect(binding.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		Expect(binding.Subjects).To(ConsistOf(HaveField("Name", fleet.MetricsReaderServiceAccount)))
		Expect(pull.ManagerMetricsURL()).To(HavePrefix("https://"), "the chart's --metrics-secure")

		bound, err := theFleet.Hub.ServiceAccountToken(ctx, fleet.MetricsReaderNamespace, fleet.MetricsReaderServiceAccount)
		Expect(err).NotTo(HaveOccurred())
		m, err := framework.ScrapeMetricsAs(pull.ManagerMetricsURL(), bound)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Value(version.BuildInfoMetric, "go_version", runtime.Version())).To(BeEquivalentTo(1))
		Expect(m[version.BuildInfoMetric].GetMetric()).To(HaveLen(1))
		labels := map[string]string{}
		for _, l := range m[version.BuildInfoMetric].GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		Expect(labels).To(And(HaveKey("version"), HaveKey("commit")))
		Expect(labels["version"]).NotTo(BeEmpty())

		By("a ServiceAccount the chart does not bind is refused")
		Expect(hub.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.MetricsReaderNamespace, Name: "stranger"}})).To(Succeed())
		stranger, err := theFleet.Hub.ServiceAccountToken(ctx, fleet.MetricsReaderNamespace, "stranger")
		Expect(err).NotTo(HaveOccurred())
		_, err = framework.ScrapeMetricsAs(pull.ManagerMetricsURL(), stranger)
		Expect(err).To(MatchError(ContainSubstring("403 Forbidden")))
	})

	It("has each agent count its report writes and passing lease checks", func(ctx SpecContext) {
		for _, c := range clusters {
			Eventually(func(g Gomega) {
				m := scrape(g, pull.AgentMetricsURL(c))
				g.Expect(m.Value("argocd_pull_agent_report_writes_total", "operation", "apply")).To(BeNumerically(">=", 1), c)
				g.Expect(m.Value("argocd_pull_agent_hub_reachable")).To(BeEquivalentTo(1), c)
				g.Expect(m.Value(version.BuildInfoMetric, "go_version", runtime.Version())).To(BeEquivalentTo(1), c)
				for _, check := range []string{"informers", "hub", "reports"} {
					g.Expect(m.Value("argocd_pull_agent_lease_checks_total", "check", check, "result", "passed")).To(BeNumerically(">=", 1), c+" "+check)
				}
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}
	})
}
