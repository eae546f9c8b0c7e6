// Package latency measures how long a change that reached the manager waited until a
// write carried it: the propagation latency (hub Application → ManifestWork) and the
// report freshness (agent report → MulticlusterApplicationSetReport).
//
// The API server keeps no time of change that a controller could read (a resourceVersion
// is opaque; managed fields are stripped from the cache and count whole seconds), so the
// clock starts when the informer delivers the change to the controller's event handler.
// The informer updates its cache before it calls the handlers, so a reconcile that starts
// after an arrival reads that change, and a successful write made by that reconcile
// carries it. What is measured is therefore the manager's own share: the workqueue wait,
// the reconcile and the write; the watch delivery before it is not included.
package latency

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Buckets are the histogram buckets of both latencies, in seconds, doubling from 10 ms:
// wide enough for the fleet-wide fan-ins docs/benchmarks.md measures ("The scale
// benchmark").
var Buckets = prometheus.ExponentialBuckets(0.01, 2, 16)

// Arrivals records, per reconcile key, when changes arrived that no write has carried
// yet. The zero value is ready to use. Safe for concurrent use: event handlers and
// reconciles run on different goroutines.
type Arrivals struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]*pending
	// clock is time.Now when nil.
	clock func() time.Time
}

// pending is what one key waits for.
type pending struct {
	// arrivals are the times changes arrived, oldest first. Arrivals between two
	// reconcile starts are served by the same reconcile, so only the first is kept.
	arrivals []time.Time
	// lastStart is when the last reconcile of the key started.
	lastStart time.Time
}

func (a *Arrivals) now() time.Time {
	if a.clock == nil {
		return time.Now()
	}
	return a.clock()
}

// Arrived records that a change of key arrived now.
func (a *Arrivals) Arrived(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	p := a.keys[key]
	if p == nil {
		if a.keys == nil {
			a.keys = map[types.NamespacedName]*pending{}
		}
		p = &pending{}
		a.keys[key] = p
	}
	if n := len(p.arrivals); n > 0 && p.arrivals[n-1].After(p.lastStart) {
		// An earlier change not read by any reconcile yet: the next reconcile reads both.
		return
	}
	p.arrivals = append(p.arrivals, now)
}

// Started records that a reconcile of key starts now and returns the time, which the
// reconcile hands back to Written or Settled.
func (a *Arrivals) Started(key types.NamespacedName) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if p := a.keys[key]; p != nil {
		p.lastStart = now
	}
	return now
}

// Written reports that the reconcile of key that started at start wrote successfully:
// it returns how long the oldest change it carried waited, and forgets the changes that
// arrived before start. ok is false when no change was waiting (the write repaired
// something else, such as a ManifestWork edited by hand).
func (a *Arrivals) Written(key types.NamespacedName, start time.Time) (waited time.Duration, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	oldest, ok := a.take(key, start)
	if !ok {
		return 0, false
	}
	return a.now().Sub(oldest), true
}

// Settled reports that the reconcile of key that started at start completed without
// a write because none was needed: the changes that arrived before start needed none.
func (a *Arrivals) Settled(key types.NamespacedName, start time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.take(key, start)
}

// Forget drops everything recorded for key, whose object is gone.
func (a *Arrivals) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.keys, key)
}

// take removes the arrivals of key up to start and returns the oldest of them.
func (a *Arrivals) take(key types.NamespacedName, start time.Time) (time.Time, bool) {
	p := a.keys[key]
	if p == nil {
		return time.Time{}, false
	}
	served := 0
	for served < len(p.arrivals) && !p.arrivals[served].After(start) {
		served++
	}
	if served == 0 {
		return time.Time{}, false
	}
	oldest := p.arrivals[0]
	p.arrivals = slices.Delete(p.arrivals, 0, served)
	if len(p.arrivals) == 0 {
		delete(a.keys, key)
	}
	return oldest, true
}

// Predicate records the creations and updates it sees as arrivals of the object's own
// key and lets every event through. Place it after the predicates that filter, so only
// the changes that reach the controller are recorded.
func (a *Arrivals) Predicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			a.Arrived(client.ObjectKeyFromObject(e.Object))
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			a.Arrived(client.ObjectKeyFromObject(e.ObjectNew))
			return true
		},
	}
}

// MapFunc wraps a map function: every key it maps an object to records an arrival.
func (a *Arrivals) MapFunc(mapFn handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		requests := mapFn(ctx, obj)
		for _, r := range requests {
			a.Arrived(r.NamespacedName)
		}
		return requests
	}
}
