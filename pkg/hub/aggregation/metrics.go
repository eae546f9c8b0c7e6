package aggregation

import (
	"context"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// What a reconcile did with the MulticlusterApplicationSetReport (reportWrite): the result
// label of reportWrites.
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

// instrumented is the controller's reconcile.Reconciler: r with its metrics around it.
// Every reconcile is counted by what it did with the report (reportWrites), and the
// agents' report changes that reportArrivals records are timed until a report write
// carries them (reportFreshness).
func instrumented(r *reconciler, reportArrivals *latency.Arrivals) reconcile.Reconciler {
	return reportArrivals.Timed(reportFreshness, func(ctx context.Context, req ctrl.Request) (latency.Outcome, ctrl.Result, error) {
		w, err := r.reconcile(ctx, req.NamespacedName)
		if err != nil {
			return latency.Pending, ctrl.Result{}, err
		}
		if w.result != resultNone {
			reportWrites.WithLabelValues(w.result).Inc()
		}
		return w.freshness(), ctrl.Result{RequeueAfter: w.wait}, nil
	})
}

// freshness is what w did with the changes the report waits for.
func (w reportWrite) freshness() latency.Outcome {
	switch w.result {
	case resultCreated, resultUpdated:
		return latency.Written
	case resultDeleted:
		return latency.Gone
	case resultPaced:
		// The changes wait for the write after the pause.
		return latency.Pending
	default:
		return latency.Settled
	}
}
