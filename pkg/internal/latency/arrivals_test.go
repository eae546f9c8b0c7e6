package latency

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// clock is a manual clock for Arrivals.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                                  { return c.t }
func (c *clock) advance(d time.Duration)                         { c.t = c.t.Add(d) }
func newArrivals(c *clock) *Arrivals                             { return &Arrivals{clock: c.now} }
func written(a *Arrivals, start time.Time) (time.Duration, bool) { return a.Written(key, start) }

var key = types.NamespacedName{Namespace: "argocd", Name: "guestbook"}

func TestArrivals(t *testing.T) {
	type step struct {
		// one of: arrive, start, write, settle, forget, wait
		op string
		d  time.Duration
		// for write: the expected observation
		want   time.Duration
		wantOK bool
	}
	cases := map[string][]step{
		"a write carries the change that arrived before its reconcile started": {
			{op: "arrive"}, {op: "wait", d: time.Second}, {op: "start"}, {op: "wait", d: 2 * time.Second},
			{op: "write", want: 3 * time.Second, wantOK: true},
		},
		"a write without a waiting change is not observed": {
			{op: "start"}, {op: "write", wantOK: false},
		},
		"two changes before one reconcile: the oldest is timed, once": {
			{op: "arrive"}, {op: "wait", d: time.Second}, {op: "arrive"}, {op: "start"}, {op: "wait", d: time.Second},
			{op: "write", want: 2 * time.Second, wantOK: true}, {op: "start"}, {op: "write", wantOK: false},
		},
		"a change arriving during a reconcile waits for the next": {
			{op: "arrive"}, {op: "start"}, {op: "wait", d: time.Second}, {op: "arrive"}, {op: "wait", d: time.Second},
			{op: "write", want: 2 * time.Second, wantOK: true},
			{op: "start"}, {op: "wait", d: 3 * time.Second}, {op: "write", want: 4 * time.Second, wantOK: true},
		},
		"a reconcile that needed no write drops what it read": {
			{op: "arrive"}, {op: "start"}, {op: "settle"}, {op: "start"}, {op: "write", wantOK: false},
		},
		"a failed reconcile keeps the change for the retry": {
			{op: "arrive"}, {op: "start"}, {op: "wait", d: time.Second}, {op: "start"}, {op: "wait", d: time.Second},
			{op: "write", want: 2 * time.Second, wantOK: true},
		},
		"a forgotten key has nothing waiting": {
			{op: "arrive"}, {op: "forget"}, {op: "start"}, {op: "write", wantOK: false},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			a := newArrivals(c)
			var start time.Time
			for i, s := range steps {
				switch s.op {
				case "arrive":
					a.Arrived(key)
				case "start":
					start = a.Started(key)
				case "wait":
					c.advance(s.d)
				case "settle":
					a.Settled(key, start)
				case "forget":
					a.Forget(key)
				case "write":
					got, ok := written(a, start)
					if ok != s.wantOK || got != s.want {
						t.Fatalf("step %d: Written = %v, %v; want %v, %v", i, got, ok, s.want, s.wantOK)
					}
				}
			}
		})
	}
}

func TestArrivalsForgetsServedKeys(t *testing.T) {
	a := newArrivals(&clock{t: time.Unix(1000, 0)})
	a.Arrived(key)
	a.Written(key, a.Started(key))
	if len(a.keys) != 0 {
		t.Fatalf("a key with nothing waiting is kept: %v", a.keys)
	}
}
