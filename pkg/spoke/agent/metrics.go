package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Labels of the lease checks metric: the checks the lease updater makes before each
// renewal, and their results.
const (
	leaseCheckInformers = "informers"
	leaseCheckHub       = "hub"
	leaseCheckReports   = "reports"
	leaseCheckPassed    = "passed"
	leaseCheckFailed    = "failed"
)

var (
	hubReachable = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "argocd_pull_agent_hub_reachable",
		Help: "1 when the last hub health check (made before each lease renewal) succeeded, 0 otherwise.",
	})
	leaseChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_agent_lease_checks_total",
		Help: "Health checks the addon lease updater made before renewing the addon Lease (about once a minute), by check " +
			"(informers: the agent's caches are synced; hub: the hub answers the agent's credentials; reports: the hub has not " +
			"refused every report write for longer than the grace) and result (passed, failed). The Lease is renewed only when " +
			"all passed; the checks are made in that order, and none after one that failed.",
	}, []string{"check", "result"})
	hubReconnects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_agent_hub_reconnects_total",
		Help: "Times the hub answered again after report writes had failed because it could not be reached; each retries those reports and renews the addon lease, after a random wait of up to --hub-reconnect-jitter.",
	})
	hubReconnectRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_agent_hub_reconnect_retries_total",
		Help: "Reports retried because the hub answered again (instead of waiting for their backoff).",
	})
)

func init() {
	metrics.Registry.MustRegister(hubReachable, leaseChecks, hubReconnects, hubReconnectRetries)
	// Every series from the start, so a rate over them is defined before the first failure.
	for _, check := range []string{leaseCheckInformers, leaseCheckHub, leaseCheckReports} {
		for _, result := range []string{leaseCheckPassed, leaseCheckFailed} {
			leaseChecks.WithLabelValues(check, result)
		}
	}
}

// countLeaseCheck counts one run of a lease check.
func countLeaseCheck(check string, passed bool) {
	result := leaseCheckFailed
	if passed {
		result = leaseCheckPassed
	}
	leaseChecks.WithLabelValues(check, result).Inc()
}
