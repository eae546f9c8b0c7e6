package latency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestTimed checks what each outcome does with the changes that arrived before the
// reconcile: observed when written, kept when pending or failed, dropped when settled or
// gone.
func TestTimed(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	req := reconcile.Request{NamespacedName: key}
	for _, c := range []struct {
		name      string
		outcome   Outcome
		err       error
		observed  uint64
		stillWait bool
	}{
		{name: "written", outcome: Written, observed: 1},
		{name: "settled", outcome: Settled},
		{name: "gone", outcome: Gone},
		{name: "pending", outcome: Pending, stillWait: true},
		{name: "failed", outcome: Written, err: errors.New("conflict"), stillWait: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
			a := &Arrivals{clock: func() time.Time { now = now.Add(time.Second); return now }}
			h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waited", Buckets: Buckets})
			a.Arrived(key)
			r := a.Timed(h, func(context.Context, reconcile.Request) (Outcome, reconcile.Result, error) {
				return c.outcome, reconcile.Result{RequeueAfter: time.Minute}, c.err
			})
			res, err := r.Reconcile(context.Background(), req)
			if !errors.Is(err, c.err) || res.RequeueAfter != time.Minute {
				t.Errorf("Reconcile = %v, %v; want the wrapped reconcile's %v, %v", res, err, time.Minute, c.err)
			}
			var m dto.Metric
			if err := h.Write(&m); err != nil {
				t.Fatal(err)
			}
			if got := m.GetHistogram().GetSampleCount(); got != c.observed {
				t.Errorf("%d waits observed, want %d", got, c.observed)
			}
			if _, waiting := a.keys[key]; waiting != c.stillWait {
				t.Errorf("the change still waits: %t, want %t", waiting, c.stillWait)
			}
		})
	}
}
