package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/environment"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/resourcetree"
)

// component is one piece of the agent on its manager.
type component struct {
	name string
	// runnable, when set, is added to the manager as it is; otherwise setup adds the
	// component (a controller) and returns its own error.
	runnable manager.Runnable
	setup    func(manager.Manager) error
	// afterArgoCD holds the component back until Argo CD's Application CRD is
	// established: the environment controller then adds it, once.
	afterArgoCD bool
}

// newComponents makes the agent's components, each given the others it works with, in
// start order: the agent against the clusters of mgr (the managed cluster) and hub,
// renewing its Lease with kube, as configured by o; namespaces are the watched ones.
func newComponents(o *Options, namespaces []string, mgr manager.Manager, hub cluster.Cluster, kube kubernetes.Interface) []component {
	owner := reports.NewAddonOwner(hub.GetAPIReader(), o.ClusterName)
	health := newHealthChecks(mgr.GetCache(), hub.GetCache(), hub.GetAPIReader(), o.ClusterName, owner, o.reportFailureGrace())
	lease := newLeaseRenewer(health.leaseUpdater(kube, o.AddonNamespace).Start)
	hubReader := hub.GetAPIReader()
	reconnect := newHubReconnect(func(ctx context.Context) error {
		return hubReader.Get(ctx, types.NamespacedName{Namespace: o.ClusterName, Name: apps.AddonName}, &addonv1alpha1.ManagedClusterAddOn{})
	}, lease.renew, o.HubReconnectJitter)
	// The Secret is read once per connection, uncached: the agent watches no Secrets.
	trees := resourcetree.NewTrees(mgr.GetAPIReader(), o.ArgoCDNamespace, o.RedisSecret, o.redisAddress(),
		cacheutil.RedisCompressionType(o.RedisCompression))
	healthSources := resourcetree.NewHealthSources()
	reporter := reports.NewReconciler(mgr.GetClient(), hub, o.ClusterName, owner, namespaces, health.writes, healthSources, trees, reconnect)
	// The trees have a reconnect of their own: its retries go to the tree controller.
	treeReconnect := newHubReconnect(func(ctx context.Context) error {
		return hubReader.Get(ctx, types.NamespacedName{Namespace: o.ClusterName, Name: apps.AddonName}, &addonv1alpha1.ManagedClusterAddOn{})
	}, lease.renew, o.HubReconnectJitter)
	var treeReader reports.TreeReader
	if o.ResourceTrees {
		treeReader = trees
	}
	treeWriter := reports.NewTreeReconciler(mgr.GetClient(), hub, o.ClusterName, owner, namespaces, treeReader, o.ResourceTreeInterval, treeReconnect)
	requests := newRequestApplier(mgr.GetClient(), mgr.GetClient())

	// startReports adds the components held back for Argo CD; set once the table is.
	var startReports func() error
	all := []component{
		{name: "lease updater", runnable: lease},
		{name: "hub reconnect", runnable: reconnect},
		{name: "resource tree reader", runnable: manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			trees.Close()
			return nil
		})},
		{name: "report controller", afterArgoCD: true, setup: func(mgr manager.Manager) error {
			return reporter.Start(mgr, hub, o.coalesceWindow())
		}},
		{name: "resource tree hub reconnect", runnable: treeReconnect},
		{name: "resource tree controller", afterArgoCD: true, setup: func(mgr manager.Manager) error {
			return treeWriter.Start(mgr, hub, o.coalesceWindow())
		}},
		{name: "hub requests controller", afterArgoCD: true, setup: requests.start},
		{name: "environment controller", setup: func(mgr manager.Manager) error {
			env := &environment.Reconciler{
				Managed:      mgr.GetClient(),
				HubReader:    hub.GetAPIReader(),
				HubWriter:    hub.GetClient(),
				ClusterName:  o.ClusterName,
				Namespaces:   namespaces,
				StartReports: startReports,
				Conditions:   []environment.ConditionSource{healthSources, trees},
			}
			return env.SetupWithManager(mgr)
		}},
	}
	startReports = onceAfterArgoCD(mgr, all)
	return all
}

// setUp adds components to mgr in their order, except those held back for Argo CD.
func setUp(mgr manager.Manager, components []component) error {
	for _, c := range components {
		if c.afterArgoCD {
			continue
		}
		if err := c.add(mgr); err != nil {
			return err
		}
	}
	return nil
}

// onceAfterArgoCD adds the components held back for Argo CD to mgr on its first call,
// in their order, and returns what that gave on every call.
func onceAfterArgoCD(mgr manager.Manager, components []component) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			var errs []error
			for _, c := range components {
				if c.afterArgoCD {
					errs = append(errs, c.add(mgr))
				}
			}
			err = errors.Join(errs...)
		})
		return err
	}
}

func (c component) add(mgr manager.Manager) error {
	if c.runnable == nil {
		return c.setup(mgr)
	}
	if err := mgr.Add(c.runnable); err != nil {
		return fmt.Errorf("adding the %s: %w", c.name, err)
	}
	return nil
}
