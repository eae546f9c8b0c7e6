// Package agent is the managed-cluster process, `argocd-pull-addon agent`: it watches
// the cluster's Argo CD Applications and reports their status to the hub.
//
// The package is the process around the agent's jobs: its options and flags, the
// manager against the managed cluster with the agent's client of the hub, the addon
// Lease and the health checks that gate its renewal, the reconnect to the hub, and the
// table (components.go) that wires the jobs together: the reports (pkg/spoke/reports),
// the resource trees (pkg/spoke/resourcetree), the environment controller
// (pkg/spoke/environment) and the hub requests (requests.go).
package agent

import (
	"context"
	"errors"
	"fmt"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NewCommand returns the `agent` subcommand.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the managed-cluster side: the agent that reports Application status to the hub",
		Long: `Run the argocd-pull agent on a managed cluster.

The agent watches the Argo CD Applications of --watch-namespaces on the managed cluster
named by --kubeconfig (or its in-cluster service account). For every Application pulled
from the hub it keeps one ApplicationStatusReport in the namespace --cluster-name on the
hub named by --hub-kubeconfig, renews the addon Lease in --addon-namespace while reports
flow (the hub answers and takes its writes), and says on its ManagedClusterAddOn which
namespaces it watches, when Argo CD or a watched namespace is missing, whether Argo CD
keeps per-resource health in the Applications and, when it keeps it in its resource tree,
whether the agent can read that tree from Argo CD's Redis (--redis-address, with the
password of the --redis-secret Secret in --argocd-namespace). With --resource-trees it
also keeps, next to each report, an ApplicationResourceTree: the Application's full
resource tree, written when it changed, at most once per --resource-tree-interval.
It serves /healthz and /readyz on --health-probe-bind-address and Prometheus metrics on
--metrics-bind-address, and stops cleanly on SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(ctrl.SetupSignalHandler())
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the agent's flags. The addon's Deployment template passes them:
// keep their names.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	o.Endpoints.AddFlags(fs, "Kubeconfig of the managed cluster the agent runs on.")
	fs.StringVar(&o.HubKubeconfig, "hub-kubeconfig", o.HubKubeconfig,
		"Kubeconfig file of the hub, from addon registration. Client certificate files it names are re-read when rotated.")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "Name of the managed cluster: the hub namespace the agent reports to.")
	fs.StringVar(&o.AddonNamespace, "addon-namespace", o.AddonNamespace, "Namespace the addon is installed in on the managed cluster; the addon Lease lives there.")
	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespaces", o.WatchNamespaces, "Comma-separated namespaces whose Argo CD Applications the agent reports.")
	fs.StringVar(&o.ArgoCDNamespace, "argocd-namespace", o.ArgoCDNamespace,
		"Namespace of the cluster's Argo CD (its application controller and the --redis-secret).")
	fs.StringVar(&o.RedisAddress, "redis-address", o.RedisAddress,
		"Argo CD's Redis, host:port, where the agent reads resource trees (default argocd-redis.<argocd-namespace>.svc:6379).")
	fs.StringVar(&o.RedisSecret, "redis-secret", o.RedisSecret,
		"Secret in --argocd-namespace holding Argo CD's Redis password under key auth.")
	fs.StringVar(&o.RedisCompression, "redis-compression", o.RedisCompression,
		"How Argo CD compresses its Redis cache (its --redis-compress): gzip or none.")
	fs.BoolVar(&o.ResourceTrees, "resource-trees", o.ResourceTrees,
		"Send the hub every pulled Application's full resource tree (an ApplicationResourceTree next to its report), read from "+
			"Argo CD's Redis, for the hub's Argo CD UI and CLI; false deletes the trees the agent wrote.")
	fs.DurationVar(&o.ResourceTreeInterval, "resource-tree-interval", o.ResourceTreeInterval,
		"Least time between two writes of one Application's resource tree; the changes in between ride along in the next write.")
	fs.Float32Var(&o.HubQPS, "hub-kube-api-qps", o.HubQPS,
		"Sustained requests per second to the hub, all the agent's requests to it together (--kube-api-qps is the managed cluster's).")
	fs.IntVar(&o.HubBurst, "hub-kube-api-burst", o.HubBurst,
		"Requests allowed in a burst to the hub (--kube-api-burst is the managed cluster's).")
	fs.DurationVar(&o.HubReconnectJitter, "hub-reconnect-jitter", o.HubReconnectJitter,
		"Most the agent waits, at random, after the hub answers again before it retries the report writes that waited for it "+
			"and renews its lease, so that a fleet does not reach a recovering hub at once; 0: at once.")
}

// Validate reports every missing or invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.HubKubeconfig == "" && o.HubConfig == nil {
		errs = append(errs, errors.New("--hub-kubeconfig is required"))
	}
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required"))
	}
	if o.AddonNamespace == "" {
		errs = append(errs, errors.New("--addon-namespace is required"))
	}
	if len(watchNamespaces(o.WatchNamespaces)) == 0 {
		errs = append(errs, errors.New("--watch-namespaces needs at least one namespace"))
	}
	if o.ArgoCDNamespace == "" {
		errs = append(errs, errors.New("--argocd-namespace is required"))
	}
	if _, err := cacheutil.CompressionTypeFromString(o.RedisCompression); err != nil {
		errs = append(errs, fmt.Errorf("--redis-compression: %w", err))
	}
	if o.ResourceTreeInterval <= 0 {
		errs = append(errs, fmt.Errorf("--resource-tree-interval %s is not a positive duration", o.ResourceTreeInterval))
	}
	if !(o.HubQPS > 0) {
		errs = append(errs, fmt.Errorf("--hub-kube-api-qps %v is not a positive number of requests per second", o.HubQPS))
	}
	if o.HubBurst < 1 {
		errs = append(errs, fmt.Errorf("--hub-kube-api-burst %d is not a positive number of requests", o.HubBurst))
	}
	if o.HubReconnectJitter < 0 {
		errs = append(errs, fmt.Errorf("--hub-reconnect-jitter %s is negative", o.HubReconnectJitter))
	}
	return errors.Join(errs...)
}

// Run starts the agent and blocks until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid agent options: %w", err)
	}
	a, err := newAgent(o)
	if err != nil {
		return err
	}
	return a.run(ctx)
}
