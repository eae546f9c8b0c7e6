// Package agent is the managed-cluster process, `argocd-pull-addon agent`: it watches
// the cluster's Argo CD Applications and reports their status to the hub.
package agent

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/endpoints"
)

// Options configure the agent.
type Options struct {
	Endpoints *endpoints.Options
}

// NewOptions returns the agent's defaults. Its ports differ from the manager's so both
// can run on one machine without flags.
func NewOptions() *Options {
	return &Options{Endpoints: endpoints.NewOptions(8090, 8091)}
}

// NewCommand returns the `agent` subcommand.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the managed-cluster side: the agent that reports Application status to the hub",
		Long: `Run the argocd-pull agent on a managed cluster.

The agent connects to the managed cluster's API server named by --kubeconfig (or its
in-cluster service account), serves /healthz and /readyz on --health-probe-bind-address
and Prometheus metrics on --metrics-bind-address, and stops cleanly on SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(ctrl.SetupSignalHandler())
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the agent's flags.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.Endpoints.AddFlags(cmd.Flags(), "Kubeconfig of the managed cluster the agent runs on.")
}

// Run starts the agent and blocks until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	log := ctrl.Log.WithName("agent")
	cfg, err := o.Endpoints.RESTConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	mopts := o.Endpoints.ManagerOptions()
	mopts.Scheme = scheme
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("creating agent manager: %w", err)
	}
	if err := endpoints.AddChecks(mgr); err != nil {
		return err
	}
	log.Info("Starting agent", "apiServer", cfg.Host, "metrics", o.Endpoints.MetricsAddr, "probes", o.Endpoints.ProbeAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running agent: %w", err)
	}
	log.Info("Agent stopped")
	return nil
}
