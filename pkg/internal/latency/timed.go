package latency

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Outcome is what a reconcile did with the changes of its key that arrived before it
// started.
type Outcome int

const (
	// Settled: none of them needed a write.
	Settled Outcome = iota
	// Written: a write carried them; how long the oldest waited is observed.
	Written
	// Gone: the key's object is gone; what was recorded of it is dropped.
	Gone
	// Pending: they still wait, for a later reconcile (a write held back).
	Pending
)

// ReconcileFunc is a reconcile that also says what it did with its key's changes.
type ReconcileFunc func(ctx context.Context, req reconcile.Request) (Outcome, reconcile.Result, error)

// Timed is next with its changes timed: from their arrival (recorded by Predicate or
// MapFunc) to the reconcile whose write carried them, observed in waited; the
// reconcile itself only says what it did. A reconcile that fails leaves the changes
// waiting for the retry.
func (a *Arrivals) Timed(waited prometheus.Observer, next ReconcileFunc) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		started := a.Started(req.NamespacedName)
		outcome, result, err := next(ctx, req)
		if err != nil {
			return result, err
		}
		switch outcome {
		case Written:
			if wait, ok := a.Written(req.NamespacedName, started); ok {
				waited.Observe(wait.Seconds())
			}
		case Gone:
			a.Forget(req.NamespacedName)
		case Pending:
		default:
			a.Settled(req.NamespacedName, started)
		}
		return result, nil
	})
}
