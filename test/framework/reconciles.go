package framework

import (
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reconciles is how many reconciles the controller named controller has finished in this
// process, whatever their result, from controller-runtime's own metric
// (controller_runtime_reconcile_total). A test that asserts nothing happened first waits
// for this to grow, so it knows the controller looked.
func Reconciles(controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// Settled returns a check for Eventually: true once the controller named controller has
// finished no reconcile for quiet. Counting writes after it counts only what the steps
// that follow cause.
func Settled(controller string, quiet time.Duration) func() bool {
	return func() bool {
		n := Reconciles(controller)
		time.Sleep(quiet)
		return Reconciles(controller) == n
	}
}

// ReconcileCounter counts the reconciles a manager's controllers start, per controller and
// object, from the "Reconciling" line controller-runtime logs for each. Unlike Reconciles,
// what other objects (say, the clean-up of an earlier spec) cause does not reach the count
// of the object a spec watches.
type ReconcileCounter struct {
	mu     sync.Mutex
	counts map[reconciled]int
}

type reconciled struct {
	controller string
	object     types.NamespacedName
}

// NewReconcileCounter returns an empty counter; give its Logger to the manager.
func NewReconcileCounter() *ReconcileCounter {
	return &ReconcileCounter{counts: map[reconciled]int{}}
}

// Logger returns a logger that counts into c and passes every line on to next.
func (c *ReconcileCounter) Logger(next logr.Logger) logr.Logger {
	return logr.New(&countingSink{counter: c, next: next.GetSink()})
}

// Count is how many reconciles controller has started for key.
func (c *ReconcileCounter) Count(controller string, key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[reconciled{controller: controller, object: key}]
}

func (c *ReconcileCounter) add(r reconciled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[r]++
}

// countingSink is enabled at every level, so it sees controller-runtime's V(5) line, and
// forwards only what next is enabled for.
type countingSink struct {
	counter *ReconcileCounter
	next    logr.LogSink
	// values are the key/value pairs the logger was given with WithValues.
	values []any
}

func (s *countingSink) Init(info logr.RuntimeInfo) {
	if s.next != nil {
		s.next.Init(info)
	}
}

func (s *countingSink) Enabled(int) bool { return true }

func (s *countingSink) Info(level int, msg string, kv ...any) {
	if msg == "Reconciling" {
		var r reconciled
		for i := 0; i+1 < len(s.values); i += 2 {
			value, _ := s.values[i+1].(string)
			switch s.values[i] {
			case "controller":
				r.controller = value
			case "namespace":
				r.object.Namespace = value
			case "name":
				r.object.Name = value
			}
		}
		s.counter.add(r)
	}
	if s.next != nil && s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s *countingSink) Error(err error, msg string, kv ...any) {
	if s.next != nil {
		s.next.Error(err, msg, kv...)
	}
}

func (s *countingSink) WithValues(kv ...any) logr.LogSink {
	out := *s
	out.values = append(slices.Clip(s.values), kv...)
	if s.next != nil {
		out.next = s.next.WithValues(kv...)
	}
	return &out
}

func (s *countingSink) WithName(name string) logr.LogSink {
	out := *s
	if s.next != nil {
		out.next = s.next.WithName(name)
	}
	return &out
}
