package aggregation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"
)

// What a reconcile did with the MulticlusterApplicationSetReport: the result label of
// reportWrites.
const (
	resultCreated = "created"
	resultUpdated = "updated"
	resultDeleted = "deleted"
	// resultSkipped: the report built equals the stored one, so nothing was written.
	resultSkipped = "skipped"
	// resultPaced: reports were written moments ago; the reconcile runs again when the
	// next write may be made (writePacing).
	resultPaced = "paced"
	// resultNone: the ApplicationSet has no pulled or hub-rendered Application and no
	// report; not counted.
	resultNone = ""
)

// The controller's metrics (docs/metrics.md).
var (
	reportFreshness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "argocd_pull_report_freshness_seconds",
		Help: "Time from an argocd-pull agent's ApplicationStatusReport change reaching the manager to the write of the " +
			"MulticlusterApplicationSetReport that carries it. Changes that left the report as it was are not observed.",
		Buckets: latency.Buckets,
	})
	reportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_applicationset_reports_total",
		Help: "Reconciles of an ApplicationSet's MulticlusterApplicationSetReport, by result: created, updated, deleted " +
			"(the ApplicationSet is gone), skipped (the report built equals the stored one, nothing written), paced (reports " +
			"were written moments ago, the reconcile runs again when the next write may be made).",
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(reportFreshness, reportWrites)
	// Every series from the start, so a rate over them is defined before the first write.
	for _, result := range []string{resultCreated, resultUpdated, resultDeleted, resultSkipped, resultPaced} {
		reportWrites.WithLabelValues(result)
	}
}
