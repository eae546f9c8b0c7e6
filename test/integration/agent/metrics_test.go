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

// hubReconnectRetries counts the reports retried at once because the hub answered again.
func hubReconnectRetries() float64 {
	return counterValue("argocd_pull_agent_hub_reconnect_retries_total")
}

// leaseChecks is how many lease checks (check "informers", "hub" or "reports") the
// health checks counted with result ("passed" or "failed"), over every agent of this
// process: each is a call by an agent's lease updater.
func leaseChecks(check, result string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "argocd_pull_agent_lease_checks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["check"] == check && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
