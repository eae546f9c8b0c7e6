//go:build e2e

package pull_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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

	It("has each agent count its report writes and passing lease checks", func(ctx SpecContext) {
		for _, c := range clusters {
			Eventually(func(g Gomega) {
				m := scrape(g, pull.AgentMetricsURL(c))
				g.Expect(m.Value("argocd_pull_agent_report_writes_total", "operation", "apply")).To(BeNumerically(">=", 1), c)
				g.Expect(m.Value("argocd_pull_agent_hub_reachable")).To(BeEquivalentTo(1), c)
				for _, check := range []string{"informers", "hub", "reports"} {
					g.Expect(m.Value("argocd_pull_agent_lease_checks_total", "check", check, "result", "passed")).To(BeNumerically(">=", 1), c+" "+check)
				}
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}
	})
}
