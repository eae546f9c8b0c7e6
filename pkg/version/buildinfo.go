package version

import (
	"errors"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfoMetric names the gauge that says which build serves the metrics.
const BuildInfoMetric = "argocd_pull_build_info"

// buildInfo is always 1; its labels are the point: a dashboard or alert joins on them to
// tell which version runs where, and a rollout shows as the label set changing.
var buildInfo = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
	Name: BuildInfoMetric,
	Help: "Always 1, labelled with the version and commit of argocd-pull-addon and the Go version it was built with.",
	ConstLabels: prometheus.Labels{
		"version":    Version,
		"commit":     Commit,
		"go_version": runtime.Version(),
	},
}, func() float64 { return 1 })

// RegisterBuildInfo registers the build-info gauge with reg. Both the manager and the
// agent call it when they start; a process (a test) that starts both, or one of them
// twice, finds it registered already, which is not an error.
func RegisterBuildInfo(reg prometheus.Registerer) error {
	if err := reg.Register(buildInfo); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return err
	}
	return nil
}
