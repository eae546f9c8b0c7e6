package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/endpoints"
)

// applicationCRDName is the CRD whose presence means Argo CD is installed.
const applicationCRDName = "applications.argoproj.io"

// fieldOwner names the agent in the reports' managed fields.
const fieldOwner = "argocd-pull-agent"

// agent is one running agent: a controller-runtime manager against the managed cluster,
// with a cluster against the hub (its cache scoped to the cluster namespace) added to it.
type agent struct {
	opts       *Options
	namespaces []string
	mgr        manager.Manager
	hub        cluster.Cluster
	health     *healthChecks
	// startReports starts the report and hub request controllers once, when Argo CD's
	// CRD is there.
	startReports func() error
}

// Scheme has the types the agent reads and writes, on either side.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		argov1alpha1.AddToScheme,
		appsv1alpha1.AddToScheme,
		addonv1alpha1.Install,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

func newAgent(o *Options) (*agent, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	managedCfg := o.ManagedConfig
	if managedCfg == nil {
		if managedCfg, err = o.Endpoints.RESTConfig(); err != nil {
			return nil, err
		}
	}
	hubCfg, err := o.hubRESTConfig()
	if err != nil {
		return nil, err
	}
	a := &agent{opts: o, namespaces: watchNamespaces(o.WatchNamespaces)}

	mopts := o.Endpoints.ManagerOptions()
	mopts.Scheme = scheme
	mopts.Cache = a.managedCacheOptions()
	if a.mgr, err = ctrl.NewManager(managedCfg, mopts); err != nil {
		return nil, fmt.Errorf("creating the managed-cluster manager: %w", err)
	}
	if err := endpoints.AddChecks(a.mgr); err != nil {
		return nil, err
	}
	if a.hub, err = cluster.New(hubCfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = cache.Options{
			// The agent's hub Role covers its cluster namespace only. Reports are the only
			// kind the hub cache holds (the ManagedClusterAddOn is read uncached), so the
			// label selector is the cache's default: ByObject would need the REST mapping,
			// and the hub may be unreachable when the agent starts.
			DefaultNamespaces:    map[string]cache.Config{o.ClusterName: {}},
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{apps.LabelReportManagedBy: apps.ReportManagedByAgent}),
			DefaultTransform:     cache.TransformStripManagedFields(),
		}
	}); err != nil {
		return nil, fmt.Errorf("creating the hub client: %w", err)
	}
	if err := a.mgr.Add(a.hub); err != nil {
		return nil, fmt.Errorf("adding the hub cache: %w", err)
	}

	kube, err := kubernetes.NewForConfig(managedCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the managed-cluster client: %w", err)
	}
	owner := newAddonOwner(a.hub.GetAPIReader(), o.ClusterName)
	a.health = newHealthChecks(a.mgr.GetCache(), a.hub.GetCache(), a.hub.GetAPIReader(), o.ClusterName, owner, o.reportFailureGrace())
	lease := newLeaseRenewer(a.health.leaseUpdater(kube, o.AddonNamespace).Start)
	if err := a.mgr.Add(lease); err != nil {
		return nil, fmt.Errorf("adding the lease updater: %w", err)
	}
	hubReader := a.hub.GetAPIReader()
	reconnect := newHubReconnect(func(ctx context.Context) error {
		return hubReader.Get(ctx, types.NamespacedName{Namespace: o.ClusterName, Name: apps.AddonName}, &addonv1alpha1.ManagedClusterAddOn{})
	}, lease.renew)
	if err := a.mgr.Add(reconnect); err != nil {
		return nil, fmt.Errorf("adding the hub reconnect: %w", err)
	}

	// The Secret is read once per connection, uncached: the agent watches no Secrets.
	trees := newResourceTrees(a.mgr.GetAPIReader(), o.ArgoCDNamespace, o.RedisSecret, o.redisAddress(),
		cacheutil.RedisCompressionType(o.RedisCompression))
	if err := a.mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		trees.Close()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("adding the resource tree reader: %w", err)
	}
	reports := newReportReconciler(a.mgr.GetClient(), a.hub, o.ClusterName, owner, a.namespaces, a.health.writes, trees, reconnect)
	requests := newRequestApplier(a.mgr.GetClient(), a.mgr.GetClient())
	var once sync.Once
	var startErr error
	a.startReports = func() error {
		once.Do(func() {
			startErr = errors.Join(reports.start(a.mgr, a.hub, o.coalesceWindow()), requests.start(a.mgr))
		})
		return startErr
	}
	env := &environmentReconciler{
		managed:      a.mgr.GetClient(),
		hubReader:    a.hub.GetAPIReader(),
		hubWriter:    a.hub.GetClient(),
		clusterName:  o.ClusterName,
		namespaces:   a.namespaces,
		startReports: a.startReports,
		healthSource: reports.healthSources,
		trees:        trees,
	}
	if err := env.setupWithManager(a.mgr); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *agent) run(ctx context.Context) error {
	log := ctrl.Log.WithName("agent")
	log.Info("Starting agent", "cluster", a.opts.ClusterName, "watchNamespaces", a.namespaces,
		"addonNamespace", a.opts.AddonNamespace, "metrics", a.opts.Endpoints.MetricsAddr, "probes", a.opts.Endpoints.ProbeAddr)
	if err := a.mgr.Start(ctx); err != nil {
		return fmt.Errorf("running agent: %w", err)
	}
	log.Info("Agent stopped")
	return nil
}

// managedCacheOptions scope the managed-cluster cache to what the agent needs:
// Applications of the watched namespaces, the watched namespaces themselves and Argo
// CD's Application CRD, both selected by name so the agent watches for them to appear
// rather than polling.
func (a *agent) managedCacheOptions() cache.Options {
	watched := make(map[string]cache.Config, len(a.namespaces))
	for _, ns := range a.namespaces {
		watched[ns] = cache.Config{}
	}
	// Every namespace carries its own name in this label (Kubernetes ≥ 1.21).
	byName, err := labels.NewRequirement(corev1.LabelMetadataName, selection.In, a.namespaces)
	selector := labels.Nothing()
	if err == nil {
		selector = labels.NewSelector().Add(*byName)
	}
	return cache.Options{
		// Applications are the only namespaced kind the managed cache holds. Naming them in
		// ByObject instead would need their REST mapping, which does not exist before Argo
		// CD is installed.
		DefaultNamespaces: watched,
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Namespace{}: {Label: selector},
			&apiextensionsv1.CustomResourceDefinition{}: {
				Field: fields.OneTermEqualSelector("metadata.name", applicationCRDName),
			},
		},
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
		cfg.QPS, cfg.Burst = o.Endpoints.QPS, o.Endpoints.Burst
	}
	return rest.CopyConfig(cfg), nil
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
