package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/argocdredis"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/endpoints"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/resourcetree"
)

// DefaultCoalesceWindow is how long the agent waits after an Application changes before
// it writes the report: every further change in that window rides along in the same
// write, and a spoke change still reaches the hub in about a second.
const DefaultCoalesceWindow = time.Second

// DefaultReportFailureGrace is how long the agent's report writes may all fail before it
// stops renewing its addon lease.
//
// It is a time, not a number of failures: how many writes fail in a minute depends on how
// many Applications changed, not on how long the hub has refused them. It is
// retry.MaxDelay, the longest a failed write waits for its retry, so a streak this long
// means every write that failed was retried at least once and failed again; a blip (an
// API server restarting, a webhook timing out) is over by then. It need not be longer:
// one withheld renewal does not make the agent unavailable, the registration agent first
// waits five lease durations (5 minutes) without a renewal. So the hub stops trusting the
// agent's reports some 2 + 1 + 5 minutes after it started refusing them.
const DefaultReportFailureGrace = retry.MaxDelay

// DefaultHubQPS and DefaultHubBurst bound the agent's requests to the hub, far below its
// managed-cluster client's (--kube-api-qps 200, burst 400): the hub serves every agent of
// the fleet, and after a hub outage 1,000 agents reconnecting at 200 QPS each would be a
// stampede. What the agent sends the hub is small: at most one report write per changed
// Application per coalescing window (about a second), a read of its ManagedClusterAddOn
// per lease renewal (a minute), a status patch of it when a condition changes, and the
// list and watch of its own reports when it (re)connects. 20 a second with bursts of 50
// write a rollout that changes 50 Applications of a cluster in the same second at once,
// keep every Application of a cluster under the report quota's 1,000 current within a
// minute, and bound a fleet of 1,000 agents to a tenth of what 200 allowed.
const (
	DefaultHubQPS   = 20
	DefaultHubBurst = 50
)

// DefaultHubReconnectJitter is the most an agent waits, at random, after the hub answers
// again before it retries the report writes that waited for it and renews its lease. Every
// agent of a fleet sees the hub come back at the same moment; spread over 10 s, 1,000
// agents arrive 100 a second instead of all at once. The cost is the same 10 s at most on
// the hub's view of what changed during the outage; without the reconnect, those writes
// would wait for their own backoff, up to retry.MaxDelay.
const DefaultHubReconnectJitter = 10 * time.Second

// Options configure the agent.
type Options struct {
	Endpoints *endpoints.Options

	// HubKubeconfig is the kubeconfig file of the hub, as addon registration mounts it
	// (the registration Secret as a directory). Client certificates it names by file are
	// re-read by client-go when they rotate.
	HubKubeconfig string
	// ClusterName is the managed cluster's name: the hub namespace reports go to.
	ClusterName string
	// AddonNamespace is the install namespace on the managed cluster, home of the Lease.
	AddonNamespace string
	// WatchNamespaces are the namespaces whose Applications the agent reports.
	WatchNamespaces []string

	// ArgoCDNamespace is where the cluster's Argo CD runs: its application controller's
	// namespace (the resource tree keys of Applications elsewhere carry their namespace)
	// and the home of RedisSecret.
	ArgoCDNamespace string
	// RedisAddress is Argo CD's Redis, host:port; empty means its Service,
	// argocd-redis.<ArgoCDNamespace>.svc:6379.
	RedisAddress string
	// RedisSecret is the Secret in ArgoCDNamespace holding Argo CD's Redis password
	// (key auth), as Argo CD's own installation creates it.
	RedisSecret string
	// RedisCompression is how Argo CD compresses its cache (its --redis-compress): gzip
	// (Argo CD's default) or none.
	RedisCompression string

	// ResourceTrees switches the ApplicationResourceTrees on: the full resource tree of
	// every pulled Application, for the hub's Argo CD UI and CLI. Off, the agent deletes
	// the trees it wrote.
	ResourceTrees bool
	// ResourceTreeInterval is the least time between two writes of one Application's tree.
	ResourceTreeInterval time.Duration

	// HubQPS and HubBurst bound every request of the agent to the hub: one token bucket
	// shared by all its clients of the hub (client-go otherwise gives each API group's
	// client a bucket of its own).
	HubQPS   float32
	HubBurst int
	// HubReconnectJitter is the most the agent waits, at random, after the hub answers
	// again before it retries the report writes that waited for it; 0 retries at once.
	HubReconnectJitter time.Duration

	// HubConfig and ManagedConfig, when set, are used as they are instead of
	// HubKubeconfig and Endpoints.Kubeconfig (HubQPS, HubBurst and Endpoints.QPS, Burst
	// then do not apply); for running the agent inside another program (the tests).
	HubConfig     *rest.Config
	ManagedConfig *rest.Config
	// CoalesceWindow overrides DefaultCoalesceWindow when not zero.
	CoalesceWindow time.Duration
	// ReportFailureGrace overrides DefaultReportFailureGrace when not zero.
	ReportFailureGrace time.Duration
}

// NewOptions returns the agent's defaults. Its ports differ from the manager's so both
// can run on one machine without flags.
func NewOptions() *Options {
	return &Options{
		Endpoints:        endpoints.NewOptions(8090, 8091),
		AddonNamespace:   "open-cluster-management-agent-addon",
		WatchNamespaces:  []string{"argocd"},
		ArgoCDNamespace:  "argocd",
		RedisSecret:      resourcetree.DefaultRedisSecret,
		RedisCompression: string(cacheutil.RedisCompressionGZip),

		ResourceTrees:        true,
		ResourceTreeInterval: reports.DefaultTreeInterval,

		HubQPS:             DefaultHubQPS,
		HubBurst:           DefaultHubBurst,
		HubReconnectJitter: DefaultHubReconnectJitter,
	}
}

// hubRESTConfig loads the hub kubeconfig. client-go re-reads client certificate and
// key files on rotation (transport.ReloadTLSFiles) when the kubeconfig names them as
// files, which is how addon registration writes it; inline certificate data cannot rotate.
func (o *Options) hubRESTConfig() (*rest.Config, error) {
	cfg := o.HubConfig
	if cfg == nil {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", o.HubKubeconfig); err != nil {
			return nil, fmt.Errorf("loading hub kubeconfig %s: %w", o.HubKubeconfig, err)
		}
		if len(cfg.CertData) > 0 {
			ctrl.Log.WithName("agent").Info("The hub kubeconfig embeds its client certificate: it will not be reloaded when rotated",
				"kubeconfig", o.HubKubeconfig)
		}
		cfg.QPS, cfg.Burst = o.HubQPS, o.HubBurst
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(o.HubQPS, o.HubBurst)
	}
	return rest.CopyConfig(cfg), nil
}

// redisAddress is RedisAddress or Argo CD's Service in ArgoCDNamespace.
func (o *Options) redisAddress() string {
	if o.RedisAddress != "" {
		return o.RedisAddress
	}
	return argocdredis.ServiceAddress(o.ArgoCDNamespace)
}

func (o *Options) reportFailureGrace() time.Duration {
	if o.ReportFailureGrace > 0 {
		return o.ReportFailureGrace
	}
	return DefaultReportFailureGrace
}

func (o *Options) coalesceWindow() time.Duration {
	if o.CoalesceWindow > 0 {
		return o.CoalesceWindow
	}
	return DefaultCoalesceWindow
}

// watchNamespaces trims, de-duplicates and sorts the namespace list.
func watchNamespaces(in []string) []string {
	var out []string
	for _, ns := range in {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
