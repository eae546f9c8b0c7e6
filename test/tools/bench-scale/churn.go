package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argoproj/gitops-engine/pkg/health"
)

// Churn kinds: what one status change of the churn phases is.
const (
	// churnSync: a spoke syncs a new revision; its Application is Progressing while the
	// Deployment rolls out, and Healthy settleAfter later. Each of the two is a change.
	churnSync = "sync"
	// churnRevision: a spoke syncs a new revision and stays Healthy (the figures of
	// docs/benchmarks.md before the report listed only clusters that need attention).
	churnRevision = "revision"
)

// settleAfter is how long a churnSync rollout stays Progressing.
const settleAfter = 2 * time.Second

// churn makes rate changes per second, spread at random over apps, for d; it returns the
// number of changes made. Changes run on workers, so a slow write does not slow the rate
// until every worker is busy; then the rate drops (the achieved rate is printed).
func churn(ctx context.Context, h *hub, t *tracker, apps []*simApp, kind string, rate float64, d time.Duration, workers int,
	feedback bool, since time.Time, first uint64) (int, error) {
	var (
		wg   sync.WaitGroup
		n    atomic.Int64
		errs = make(chan error, 1)
		fail = func(err error) {
			select {
			case errs <- err:
			default:
			}
		}
	)
	change := func(a *simApp, rev string, hs health.HealthStatusCode) {
		if err := a.change(ctx, h, t, rev, hs, feedback, since); err != nil {
			fail(err)
		}
		n.Add(1)
	}
	// Each start is a job; a sync's second change runs on a goroutine of its own after
	// settleAfter, so the rate holds while rollouts are in progress.
	starts := rate
	if kind == churnSync {
		starts = rate / 2
	}
	jobs := make(chan uint64, 64)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range jobs {
				a := pickIdle(apps)
				if a == nil {
					continue
				}
				rev := revision(seq)
				if kind != churnSync {
					change(a, rev, health.HealthStatusHealthy)
					a.inFlight.Store(false)
					continue
				}
				change(a, rev, health.HealthStatusProgressing)
				wg.Add(1)
				time.AfterFunc(settleAfter, func() {
					defer wg.Done()
					defer a.inFlight.Store(false)
					if ctx.Err() == nil {
						change(a, rev, health.HealthStatusHealthy)
					}
				})
			}
		}()
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / starts))
	defer tick.Stop()
	end := time.Now().Add(d)
	var err error
	for seq := first; time.Now().Before(end) && err == nil; {
		select {
		case <-tick.C:
			jobs <- seq
			seq++
		case err = <-errs:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return int(n.Load()), err
}

// pickIdle marks and returns a random one of apps with no change in flight; nil when it
// finds none in a few tries (a tiny fleet under a high rate).
func pickIdle(apps []*simApp) *simApp {
	for range 100 {
		a := apps[rand.IntN(len(apps))]
		if a.inFlight.CompareAndSwap(false, true) {
			return a
		}
	}
	return nil
}

func validChurnKind(kind string) error {
	if kind != churnSync && kind != churnRevision {
		return fmt.Errorf("--churn-kind: %q is neither %q nor %q", kind, churnSync, churnRevision)
	}
	return nil
}
