// Package endpoints holds what the manager and the agent share as processes: how they
// find their API server, and the health, readiness and metrics endpoints they serve.
package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the endpoint flags of a process. Addresses default to loopback: exposing
// them is a deployment decision (the chart sets them), not the binary's.
type Options struct {
	// Kubeconfig is the kubeconfig file of the API server the process works against;
	// empty means in-cluster (or $KUBECONFIG when run by hand).
	Kubeconfig string
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS to callers the API server authenticates
	// (TokenReview) and authorizes for GET /metrics (SubjectAccessReview), as kubebuilder
	// projects do. For an address beyond loopback: the metrics name every cluster and
	// Application the process works on.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key, the certificate the secure metrics are
	// served with (reloaded when they change); empty: a self-signed one, which a scraper
	// can only skip verifying. A certificate from a CA the scraper trusts lets it verify.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/); empty (the default) turns them off.
	// For profiling a running process, as the scale benchmark does.
	PprofAddr string
	// QPS and Burst bound the client's requests to the API server. client-go's own
	// defaults (5 and 10) would hold a burst of thousands of Applications for minutes.
	QPS   float32
	Burst int
}

// NewOptions returns Options with the given default ports on 127.0.0.1.
func NewOptions(metricsPort, probePort int) *Options {
	return &Options{
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", metricsPort),
		ProbeAddr:   fmt.Sprintf("127.0.0.1:%d", probePort),
		QPS:         200,
		Burst:       400,
	}
}

// AddFlags registers the options on fs. kubeconfigHelp says which API server the
// kubeconfig names, because the manager and the agent talk to different ones.
func (o *Options) AddFlags(fs *pflag.FlagSet, kubeconfigHelp string) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, kubeconfigHelp+" Empty: the in-cluster service account, or $KUBECONFIG.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address the Prometheus metrics endpoint (/metrics) binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve the metrics over HTTPS (a self-signed certificate) to callers the API server authenticates and authorizes for GET /metrics "+
			"(the process then creates TokenReviews and SubjectAccessReviews).")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"With --metrics-secure, the directory holding tls.crt and tls.key to serve the metrics with (reloaded when they change); empty: a self-signed certificate.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address Go's profiling endpoints (/debug/pprof/) bind to; empty disables them.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Sustained requests per second to the API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Requests allowed in a burst to the API server.")
}

// RESTConfig loads the configuration of the API server the options name.
func (o *Options) RESTConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", o.Kubeconfig, err)
		}
	} else if cfg, err = ctrl.GetConfig(); err != nil {
		return nil, fmt.Errorf("finding the API server (no --kubeconfig given, not in a cluster, no $KUBECONFIG): %w", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	return cfg, nil
}

// ManagerOptions are the controller-runtime manager options for these endpoints.
func (o *Options) ManagerOptions() ctrl.Options {
	metrics := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		metrics.SecureServing = true
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
		metrics.CertDir = o.MetricsCertDir
	}
	return ctrl.Options{
		Metrics:                metrics,
		HealthProbeBindAddress: o.ProbeAddr,
		PprofBindAddress:       o.PprofAddr,
	}
}

// AddChecks registers the liveness check and a readiness check that the API server
// answers, so /readyz fails while the process cannot do its job.
func AddChecks(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(mgr.GetConfig()))
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	if err := mgr.AddReadyzCheck("apiserver", apiServerReachable(dc.RESTClient())); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return nil
}

// apiServerReachable asks the API server's own /readyz, with a short deadline so a
// probe never hangs on an unreachable server.
func apiServerReachable(client rest.Interface) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		if err := client.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server not ready: %w", err)
		}
		return nil
	}
}
