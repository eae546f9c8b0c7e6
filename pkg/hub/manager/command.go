// Package manager is the hub process, `argocd-pull-addon manager`: it hosts the hub
// controllers and the addon manager on one controller-runtime manager.
package manager

import (
	"context"
	"fmt"
	"slices"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/aggregation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/endpoints"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
)

// Options configure the manager.
type Options struct {
	Endpoints *endpoints.Options
	// Addon holds the defaults of the argocd-pull agent the addon manager installs.
	Addon *addon.Options

	// LeaderElect makes only one of several replicas run the controllers.
	LeaderElect bool
	// LeaderElectionNamespace holds the leader election Lease; empty means the
	// namespace the manager runs in.
	LeaderElectionNamespace string

	// Controllers configure the hub controllers.
	Controllers ControllerOptions
}

// ControllerOptions configure the hub controllers.
type ControllerOptions struct {
	// AppStatus configures the Application status controller.
	AppStatus appstatus.Options
	// Propagation configures the propagation controller: who may deliver where.
	Propagation propagation.Options
	// GitOpsCluster configures the GitOpsCluster controller; its ArgoNamespaces also scope
	// the manager's cache of Secrets and ConfigMaps.
	GitOpsCluster gitopscluster.Options
	// ResourceTree configures the controller writing the clusters' resource trees into the
	// hub Argo CD's Redis; its ArgoCDNamespace is Propagation.Tenancy.ArgoCDNamespace
	// (--argocd-namespace).
	ResourceTree resourcetree.Options
}

// DefaultControllerOptions are the hub controllers' defaults.
func DefaultControllerOptions() ControllerOptions {
	return ControllerOptions{
		AppStatus:     appstatus.Options{ReportGracePeriod: appstatus.DefaultReportGracePeriod},
		Propagation:   propagation.DefaultOptions(),
		GitOpsCluster: gitopscluster.Options{ApplicationSetControllerServiceAccount: gitopscluster.DefaultApplicationSetControllerServiceAccount},
		ResourceTree:  resourcetree.DefaultOptions(),
	}
}

// NewOptions returns the manager's defaults.
func NewOptions() *Options {
	return &Options{Endpoints: endpoints.NewOptions(8080, 8081), Addon: addon.NewOptions(), Controllers: DefaultControllerOptions()}
}

// NewCommand returns the `manager` subcommand.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the hub side: the argocd-pull addon manager and the hub controllers",
		Long: `Run the hub side of the Argo CD pull model on the OCM hub cluster.

The manager connects to the hub API server named by --kubeconfig (or its in-cluster
service account), serves /healthz and /readyz on --health-probe-bind-address and
Prometheus metrics on --metrics-bind-address, and stops cleanly on SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(ctrl.SetupSignalHandler())
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the manager's flags.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	o.Endpoints.AddFlags(fs, "Kubeconfig of the OCM hub cluster.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so that only one replica runs the controllers.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease; empty: the manager's own namespace.")
	fs.DurationVar(&o.Controllers.AppStatus.ReportGracePeriod, "agent-report-grace-period", o.Controllers.AppStatus.ReportGracePeriod,
		"How long a pulled Application may go unreported by its cluster's available argocd-pull agent after its ManifestWork was applied "+
			"(or the agent became available) before the hub Application gets a NotReportedError condition; 0: the default.")
	t := &o.Controllers.Propagation.Tenancy
	fs.StringVar(&t.ArgoCDNamespace, "argocd-namespace", t.ArgoCDNamespace,
		"Namespace of the hub's Argo CD: its AppProjects, its argocd-cmd-params-cm and the GitOpsClusters' cluster Secrets are there.")
	fs.StringSliceVar(&t.ApplicationNamespaces, "application-namespaces", t.ApplicationNamespaces,
		"Namespaces, besides the Argo CD namespace and those of application.namespaces in argocd-cmd-params-cm, whose Applications may be delivered (Argo CD's patterns: globs, /regexp/).")
	fs.BoolVar(&t.CheckApplicationNamespaces, "check-application-namespaces", t.CheckApplicationNamespaces,
		"Deliver an Application only from a namespace where the hub's Argo CD accepts Applications.")
	fs.BoolVar(&t.CheckProjects, "check-projects", t.CheckProjects,
		"Deliver an Application only when its AppProject exists and permits its namespace, repositories and target cluster and namespace.")
	fs.BoolVar(&t.CheckClusterSetBindings, "check-cluster-set-bindings", t.CheckClusterSetBindings,
		"Deliver an Application only to a ManagedCluster of a ManagedClusterSet bound to the Application's namespace.")
	gitOpsClusterNamespacesHelp := "The Argo CD namespaces the manager may write Secrets, ConfigMaps and RBAC in (the chart grants it namespaced Roles there): " +
		"a GitOpsCluster may name only these, and the manager caches Secrets and ConfigMaps only there. Empty: any namespace, " +
		"which needs cluster-wide RBAC the chart does not grant."
	fs.StringSliceVar(&o.Controllers.GitOpsCluster.ArgoNamespaces, "gitopscluster-argocd-namespaces", o.Controllers.GitOpsCluster.ArgoNamespaces,
		gitOpsClusterNamespacesHelp)
	// The old name read as the plural of --argocd-namespace (the hub Argo CD's own
	// namespace, for the tenancy checks); kept for one release.
	fs.StringSliceVar(&o.Controllers.GitOpsCluster.ArgoNamespaces, "argocd-namespaces", o.Controllers.GitOpsCluster.ArgoNamespaces,
		gitOpsClusterNamespacesHelp)
	_ = fs.MarkDeprecated("argocd-namespaces", "use --gitopscluster-argocd-namespaces")
	fs.StringVar(&o.Controllers.GitOpsCluster.ApplicationSetControllerServiceAccount, "applicationset-controller-service-account",
		o.Controllers.GitOpsCluster.ApplicationSetControllerServiceAccount,
		"The ServiceAccount of Argo CD's ApplicationSet controller in each Argo CD namespace, which GitOpsClusters let read "+
			"PlacementDecisions (OpenShift GitOps and Helm releases not named argocd use other names).")
	rt := &o.Controllers.ResourceTree
	fs.BoolVar(&rt.Enabled, "resource-trees", rt.Enabled,
		"Write the resource tree each cluster's agent reports into the hub Argo CD's Redis, so the hub's Argo CD UI and CLI show "+
			"the tree of pulled Applications (docs/argocd-ui.md).")
	fs.StringVar(&rt.RedisAddress, "argocd-redis-address", rt.RedisAddress,
		"The hub Argo CD's Redis, host:port (default argocd-redis.<argocd-namespace>.svc:6379).")
	fs.StringVar(&rt.RedisSecret, "argocd-redis-secret", rt.RedisSecret,
		"Secret in --argocd-namespace holding the hub Argo CD's Redis password (key auth), as Argo CD's installation creates it; "+
			"when it does not exist, Redis is used without a password.")
	fs.StringVar(&rt.RedisCompression, "argocd-redis-compression", rt.RedisCompression,
		"How the hub Argo CD compresses its Redis cache: gzip or none; must match the hub argocd-server's --redis-compress.")
	o.Addon.AddFlags(fs)
}

// Scheme holds every type the manager reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		appsv1alpha1.AddToScheme,
		appsv1beta1.AddToScheme,
		argov1alpha1.AddToScheme,
		clusterv1.Install,
		clusterv1beta1.Install,
		clusterv1beta2.Install,
		workv1.Install,
		addonv1alpha1.Install,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// Run starts the manager and blocks until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	log := ctrl.Log.WithName("manager")
	cfg, err := o.Endpoints.RESTConfig()
	if err != nil {
		return err
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	mopts := o.Endpoints.ManagerOptions()
	mopts.Scheme = scheme
	mopts.LeaderElection = o.LeaderElect
	mopts.LeaderElectionID = "argocd-pull-addon-manager"
	mopts.LeaderElectionNamespace = o.LeaderElectionNamespace
	mopts.LeaderElectionReleaseOnCancel = true
	if mopts.Cache, err = WithOwnWatchConnection(CacheOptionsFor(o.Controllers.GitOpsCluster.ArgoNamespaces), cfg); err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := endpoints.AddChecks(mgr); err != nil {
		return err
	}
	if err := version.RegisterBuildInfo(metrics.Registry); err != nil {
		return fmt.Errorf("registering the build-info metric: %w", err)
	}
	if err := o.Setup(mgr); err != nil {
		return err
	}
	log.Info("Starting manager", "apiServer", cfg.Host, "metrics", o.Endpoints.MetricsAddr, "probes", o.Endpoints.ProbeAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("Manager stopped")
	return nil
}

// Setup registers with mgr everything the manager runs: the hub controllers and the
// argocd-pull addon manager (which runs in the elected leader only).
func (o *Options) Setup(mgr ctrl.Manager) error {
	if err := SetupControllersWith(mgr, o.Controllers); err != nil {
		return err
	}
	if _, err := addon.Setup(mgr, o.Addon); err != nil {
		return fmt.Errorf("setting up the addon manager: %w", err)
	}
	return nil
}

// CacheOptionsFor is what the manager's cache holds when argoNamespaces are the Argo CD
// namespaces (--gitopscluster-argocd-namespaces): Secrets and ConfigMaps only there, the
// only namespaces where the chart lets the manager read them, so a controller reading
// either kind never needs, nor tries, a cluster-wide list. Empty: everywhere, as in the
// tests that run hub controllers.
func CacheOptionsFor(argoNamespaces []string) cache.Options {
	var inArgoNamespaces map[string]cache.Config
	if len(argoNamespaces) > 0 {
		inArgoNamespaces = map[string]cache.Config{}
		for _, ns := range argoNamespaces {
			inArgoNamespaces[ns] = cache.Config{}
		}
	}
	return cache.Options{
		// Managed fields are never read and are a large share of every cached object; of
		// the hub Applications propagation caches as stored, it keeps only what it reads.
		DefaultTransform: trimCached,
		ByObject: map[client.Object]cache.ByObject{
			// Only the pull model's ManifestWorks, not every addon's and every user's. The
			// hub-rendered ones (apps.LabelHubRendered, docs/cmp.md) are not here on
			// purpose: a label selector cannot select either of two labels, and the
			// propagation and application status controllers read this cache and must never
			// adopt, delete or mirror them. The aggregation keeps its own cache of those.
			&workv1.ManifestWork{}: {Label: labels.SelectorFromSet(labels.Set{apps.LabelPullToOCMManagedCluster: "true"})},
			// Only this addon's ManagedClusterAddOns: their Available condition is the
			// agents' availability.
			&addonv1alpha1.ManagedClusterAddOn{}: {Field: fields.OneTermEqualSelector("metadata.name", apps.AddonName)},
			&corev1.Secret{}:                     {Namespaces: inArgoNamespaces},
			&corev1.ConfigMap{}:                  {Namespaces: inArgoNamespaces},
			// Without their payload: the resourcetree controller reads it with an uncached
			// GET when a tree's digest changed, so the cache does not grow with tree sizes.
			&appsv1alpha1.ApplicationResourceTree{}: {Transform: trimCachedTree},
		},
	}
}

// SetupControllersWith registers with mgr the shared pull-model indexes and the hub
// controllers named in only (every controller of hubControllers when empty), in the
// table's order, configured by o.
func SetupControllersWith(mgr ctrl.Manager, o ControllerOptions, only ...string) error {
	all := hubControllers(o)
	for _, name := range only {
		if !slices.ContainsFunc(all, func(c hubController) bool { return c.name == name }) {
			return fmt.Errorf("no hub controller named %q", name)
		}
	}
	selected := slices.DeleteFunc(all, func(c hubController) bool {
		return len(only) > 0 && !slices.Contains(only, c.name)
	})
	if err := pullmodel.SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	for _, c := range selected {
		if err := c.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", c.name, err)
		}
	}
	return nil
}

type hubController struct {
	name  string
	setup func(ctrl.Manager) error
}

// hubControllers are the controllers the manager runs, configured by o, in start order,
// each by the name it logs and reports metrics under.
func hubControllers(o ControllerOptions) []hubController {
	return []hubController{
		{name: gitopscluster.ControllerName, setup: func(mgr ctrl.Manager) error { return gitopscluster.Setup(mgr, o.GitOpsCluster) }},
		{name: propagation.ControllerName, setup: func(mgr ctrl.Manager) error { return propagation.Setup(mgr, o.Propagation) }},
		{name: appstatus.ControllerName, setup: func(mgr ctrl.Manager) error { return appstatus.Setup(mgr, o.AppStatus) }},
		{name: aggregation.ControllerName, setup: aggregation.Setup},
		{name: resourcetree.ControllerName, setup: func(mgr ctrl.Manager) error {
			rt := o.ResourceTree
			rt.ArgoCDNamespace = o.Propagation.Tenancy.ArgoCDNamespace
			return resourcetree.Setup(mgr, rt)
		}},
	}
}
