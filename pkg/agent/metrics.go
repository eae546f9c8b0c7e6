package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Operations the report metrics are labelled with.
const (
	operationApply  = "apply"
	operationDelete = "delete"
)

var (
	reportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_report_writes_total",
		Help: "ApplicationStatusReport writes to the hub that succeeded, by operation (apply, delete).",
	}, []string{"operation"})
	reportWriteErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_report_write_errors_total",
		Help: "ApplicationStatusReport writes to the hub that failed and will be retried, by operation (apply, delete).",
	}, []string{"operation"})
	reportsUnchanged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_agent_reports_unchanged_total",
		Help: "Application changes that left the report as it was, so nothing was written.",
	})
	hubReachable = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "argocd_pull_agent_hub_reachable",
		Help: "1 when the last hub health check (made before each lease renewal) succeeded, 0 otherwise.",
	})
	leaseUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_lease_updates_total",
		Help: "Runs of the addon lease updater, by outcome: renewed, or not renewed because the informers are not synced " +
			"(informers_not_synced), the hub does not answer (hub_unreachable) or the Lease write failed (write_failed).",
	}, []string{"outcome"})
)

func init() {
	metrics.Registry.MustRegister(reportWrites, reportWriteErrors, reportsUnchanged, hubReachable, leaseUpdates)
}
