package reports

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

	treeWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_resource_tree_writes_total",
		Help: "ApplicationResourceTree writes to the hub that succeeded, by operation (apply, delete).",
	}, []string{"operation"})
	treeWriteErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_resource_tree_write_errors_total",
		Help: "ApplicationResourceTree writes to the hub that failed and will be retried, by operation (apply, delete).",
	}, []string{"operation"})
	treesUnchanged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_agent_resource_trees_unchanged_total",
		Help: "Resource tree reads whose tree the hub already held (same digest), so nothing was written.",
	})
	treeBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_agent_resource_tree_bytes_total",
		Help: "Compressed bytes of the resource trees written to the hub.",
	})
)

func init() {
	metrics.Registry.MustRegister(reportWrites, reportWriteErrors, reportsUnchanged,
		treeWrites, treeWriteErrors, treesUnchanged, treeBytes)
	// Every series from the start, so a rate over them is defined before the first failure.
	for _, operation := range []string{operationApply, operationDelete} {
		reportWrites.WithLabelValues(operation)
		reportWriteErrors.WithLabelValues(operation)
		treeWrites.WithLabelValues(operation)
		treeWriteErrors.WithLabelValues(operation)
	}
}
