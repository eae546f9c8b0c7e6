package addon

import (
	"context"
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/cachegauge"
)

// The report quota's metrics (docs/metrics.md): how full each cluster namespace's
// ResourceQuota of ApplicationStatusReports is, before an agent's next report is refused.
var (
	reportsByCluster = cachegauge.New("argocd_pull_cluster_reports",
		"ApplicationStatusReports in each cluster namespace that holds any, which the report quota "+
			"(argocd_pull_report_quota) bounds.",
		[]string{"cluster"}, countReportsByCluster)
	reportQuota = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "argocd_pull_report_quota",
		Help: "How many ApplicationStatusReports each cluster namespace may hold (--agent-report-quota).",
	})
)

func init() {
	metrics.Registry.MustRegister(reportsByCluster, reportQuota)
}

// readMetricsFrom makes the quota's gauges count from reader with quota reports per
// cluster namespace.
func readMetricsFrom(reader client.Reader, quota int) {
	reportsByCluster.Read(reader)
	reportQuota.Set(float64(quota))
}

// countReportsByCluster counts the ApplicationStatusReports of each namespace: the agents
// write them only into their cluster's namespace. Namespaces without reports are left out,
// so the series are as many as the clusters that report, not the whole fleet.
func countReportsByCluster(ctx context.Context, reader client.Reader) ([]cachegauge.Count, error) {
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := reader.List(ctx, reports, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ApplicationStatusReports: %w", err)
	}
	counts := map[string]float64{}
	for i := range reports.Items {
		counts[reports.Items[i].Namespace]++
	}
	clusters := make([]string, 0, len(counts))
	for c := range counts {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	out := make([]cachegauge.Count, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, cachegauge.Count{LabelValues: []string{c}, Value: counts[c]})
	}
	return out, nil
}
