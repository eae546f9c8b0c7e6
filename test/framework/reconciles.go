package framework

import (
	"time"

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
