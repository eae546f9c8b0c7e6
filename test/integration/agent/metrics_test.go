package agent_test

import (
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// counterValue sums a counter of controller-runtime's registry, where the agent's
// metrics live, over its labels.
func counterValue(name string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func unchangedReconciles() float64 { return counterValue("argocd_pull_agent_reports_unchanged_total") }

func writeErrors() float64 { return counterValue("argocd_pull_agent_report_write_errors_total") }

// leaseUpdates counts the runs of the agents' lease updaters that ended with outcome
// (renewed, hub_unreachable, ...), over every agent of this process.
func leaseUpdates(outcome string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "argocd_pull_agent_lease_updates_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
