package propagation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"
)

// propagationLatency is the controller's metric (docs/metrics.md).
var propagationLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name: "argocd_pull_propagation_latency_seconds",
	Help: "Time from a change of a pulled hub Application reaching the manager to the write of the ManifestWork " +
		"that carries it (created or updated). Changes that needed no ManifestWork write are not observed.",
	Buckets: latency.Buckets,
})

func init() {
	metrics.Registry.MustRegister(propagationLatency)
}
