package agent

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/endpoints"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/environment"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
)

// agent is one running agent: a controller-runtime manager against the managed cluster,
// with a cluster against the hub (its cache scoped to the cluster namespace) added to it.
type agent struct {
	opts       *Options
	namespaces []string
	mgr        manager.Manager
	hub        cluster.Cluster
}

// newScheme has the types the agent reads and writes, on either side.
func newScheme() (*runtime.Scheme, error) {
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

// newAgent connects to both clusters and sets up the agent's components on its manager.
func newAgent(o *Options) (*agent, error) {
	scheme, err := newScheme()
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
	mopts.Cache = managedCacheOptions(a.namespaces)
	if a.mgr, err = ctrl.NewManager(managedCfg, mopts); err != nil {
		return nil, fmt.Errorf("creating the managed-cluster manager: %w", err)
	}
	if err := endpoints.AddChecks(a.mgr); err != nil {
		return nil, err
	}
	if err := version.RegisterBuildInfo(metrics.Registry); err != nil {
		return nil, fmt.Errorf("registering the build-info metric: %w", err)
	}
	if a.hub, err = newHubCluster(hubCfg, scheme, o.ClusterName); err != nil {
		return nil, err
	}
	if err := a.mgr.Add(a.hub); err != nil {
		return nil, fmt.Errorf("adding the hub cache: %w", err)
	}
	kube, err := kubernetes.NewForConfig(managedCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the managed-cluster client: %w", err)
	}
	if err := setUp(a.mgr, newComponents(o, a.namespaces, a.mgr, a.hub, kube)); err != nil {
		return nil, err
	}
	return a, nil
}

// newHubCluster is the agent's client of the hub, its cache scoped to the cluster
// namespace clusterName.
func newHubCluster(cfg *rest.Config, scheme *runtime.Scheme, clusterName string) (cluster.Cluster, error) {
	hub, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = cache.Options{
			// The agent's hub Role covers its cluster namespace only. Reports and resource
			// trees are the only kinds the hub cache holds (the ManagedClusterAddOn is read
			// uncached), so the label selector and the transform are the cache's defaults:
			// ByObject would need the REST mapping, and the hub may be unreachable when the
			// agent starts.
			DefaultNamespaces:    map[string]cache.Config{clusterName: {}},
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{apps.LabelReportManagedBy: apps.ReportManagedByAgent}),
			DefaultTransform:     hubCacheTransform,
		}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the hub client: %w", err)
	}
	return hub, nil
}

// hubCacheTransform strips what the agent never reads from the objects of its hub cache:
// managed fields, and the payload of resource trees (reports.DropTreePayload).
func hubCacheTransform(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return obj, err
	}
	return reports.DropTreePayload(obj)
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
func managedCacheOptions(namespaces []string) cache.Options {
	watched := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		watched[ns] = cache.Config{}
	}
	// Every namespace carries its own name in this label (Kubernetes ≥ 1.21).
	byName, err := labels.NewRequirement(corev1.LabelMetadataName, selection.In, namespaces)
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
				Field: fields.OneTermEqualSelector("metadata.name", environment.ApplicationCRDName),
			},
		},
	}
}
