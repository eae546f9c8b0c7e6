package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	frameworkagent "open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const argoNamespace = "argocd"

// hub is one real hub API server with the fleet's objects, as the OCM hub would hold them.
type hub struct {
	server     *framework.APIServer
	admin      client.Client // fast, uncached, system:masters
	adminCfg   *rest.Config
	kubeconfig string // the admin kubeconfig file the manager runs with

	mapper meta.RESTMapper
	// ownConnections: each simulated spoke's agent and work agent, and the tracker, have a
	// connection of their own, as separate processes have; otherwise every client of the
	// load generator shares the admin client's one connection (client-go's transport
	// cache), as in every figure of docs/benchmarks.md unless it says otherwise.
	ownConnections bool
	mu             sync.Mutex
	agents         map[string]client.Client // cluster -> client impersonating its argocd-pull agent
	workAgents     map[string]client.Client // cluster -> client of its work agent
	// addons: cluster -> owner reference to its ManagedClusterAddOn, owner of its reports.
	addons map[string]metav1.OwnerReference
}

func clusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }

// startHub starts the API server and writes an admin kubeconfig into dir.
func startHub(dir string, ownConnections bool) (*hub, error) {
	server, err := framework.StartAPIServer()
	if err != nil {
		return nil, err
	}
	h := &hub{server: server, ownConnections: ownConnections, agents: map[string]client.Client{}, workAgents: map[string]client.Client{},
		addons: map[string]metav1.OwnerReference{}}
	fail := func(err error) (*hub, error) { _ = server.Stop(); return nil, err }
	user, err := server.Env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(fmt.Errorf("adding the admin user: %w", err))
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fail(err)
	}
	h.kubeconfig = filepath.Join(dir, "hub.kubeconfig")
	if err := os.WriteFile(h.kubeconfig, data, 0o600); err != nil {
		return fail(err)
	}
	h.adminCfg = rest.CopyConfig(server.Config)
	h.adminCfg.QPS, h.adminCfg.Burst = 2000, 4000
	hc, err := rest.HTTPClientFor(h.adminCfg)
	if err != nil {
		return fail(err)
	}
	h.mapper, err = apiutil.NewDynamicRESTMapper(h.adminCfg, hc)
	if err != nil {
		return fail(err)
	}
	h.admin, err = client.New(h.adminCfg, client.Options{Scheme: server.Scheme, HTTPClient: hc, Mapper: h.mapper})
	if err != nil {
		return fail(err)
	}
	return h, nil
}

func (h *hub) stop() error { return h.server.Stop() }

// createFleet creates what the OCM hub holds for n joined clusters with the addon enabled:
// the ManagedCluster and its namespace, the argocd-pull ManagedClusterAddOn, Available as
// the registration agent reports it from the agent's lease, and the agent's hub RoleBinding
// as our PermissionConfig builds it. Also the Argo CD namespace and the chart's
// ClusterManagementAddOn and agent ClusterRole.
func (h *hub) createFleet(ctx context.Context, n int) error {
	c := h.admin
	// The Argo CD namespace, its AppProject default and the global ManagedClusterSet bound
	// to it: what lets the propagation controller's tenancy checks deliver to every cluster.
	if err := framework.AllowEveryDelivery(ctx, c, argoNamespace); err != nil {
		return err
	}
	objs, err := framework.RenderChart(argoNamespace, nil)
	if err != nil {
		return err
	}
	var cma client.Object
	for _, o := range objs {
		switch {
		case o.GetKind() == "ClusterManagementAddOn":
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating the ClusterManagementAddOn: %w", err)
			}
			cma = o
		case o.GetKind() == "ClusterRole" && o.GetName() == addon.AgentHubRoleName:
			// What the agents' RoleBindings grant.
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating the agents' hub ClusterRole: %w", err)
			}
		}
	}
	if cma == nil {
		return fmt.Errorf("the chart has no ClusterManagementAddOn")
	}
	// OCM's hub addon manager makes every ManagedClusterAddOn owned by its
	// ClusterManagementAddOn; the addon framework acts only on those.
	owner := metav1.OwnerReference{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn",
		Name: cma.GetName(), UID: cma.GetUID(), BlockOwnerDeletion: ptr.To(true), Controller: ptr.To(true)}
	return framework.Parallel(ctx, n, 16, func(i int) error {
		name := clusterName(i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "default"}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "Managed cluster is available"})
		if err := c.Status().Update(ctx, mc); err != nil {
			return err
		}
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: apps.AddonName, Namespace: name,
			OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "open-cluster-management-agent-addon"}}
		if err := c.Create(ctx, mca); err != nil {
			return err
		}
		h.mu.Lock()
		h.addons[name] = reports.AddonOwnerReference(mca)
		h.mu.Unlock()
		if err := h.markAvailable(ctx, mca); err != nil {
			return err
		}
		return createIgnoringExisting(ctx, c, addon.AgentHubRoleBinding(name, mca))
	})
}

// addonOwner is the owner reference of cluster's reports: its ManagedClusterAddOn.
func (h *hub) addonOwner(cluster string) metav1.OwnerReference {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addons[cluster]
}

// markAvailable sets the addon's Available condition as the registration agent does while
// the agent renews its lease.
func (h *hub) markAvailable(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable,
		Status: metav1.ConditionTrue, Reason: "ManagedClusterAddOnLeaseUpdated", Message: "argocd-pull add-on is available."})
	return h.admin.Status().Update(ctx, mca)
}

func createIgnoringExisting(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// agentUser is the hub user of a cluster's argocd-pull agent, as addon registration issues
// its client certificate.
func agentUser(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s:agent:argocd-pull-agent", cluster, apps.AddonName)
}

// agentClient is a client of the hub that impersonates the cluster's agent (its user and
// the framework's groups), so the agent's hub RBAC applies to every request.
func (h *hub) agentClient(cluster string) (client.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.agents[cluster]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(h.adminCfg)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Impersonate = rest.ImpersonationConfig{UserName: agentUser(cluster), Groups: frameworkagent.DefaultGroups(cluster, apps.AddonName)}
	c, err := h.spokeClient(cfg)
	if err != nil {
		return nil, err
	}
	h.agents[cluster] = c
	return c, nil
}

// workAgentClient is the client of cluster's OCM work agent (as the admin: the work
// agent's own RBAC is not what is measured).
func (h *hub) workAgentClient(cluster string) (client.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.workAgents[cluster]; ok {
		return c, nil
	}
	c, err := h.spokeClient(rest.CopyConfig(h.adminCfg))
	if err != nil {
		return nil, err
	}
	h.workAgents[cluster] = c
	return c, nil
}

// spokeClient is a client of cfg for a process of a managed cluster: on a connection of
// its own when h.ownConnections. client-go caches transports by TLS configuration (and
// impersonation only wraps them), so without a dial function of its own every simulated
// spoke would write through one HTTP/2 connection.
func (h *hub) spokeClient(cfg *rest.Config) (client.Client, error) {
	if h.ownConnections {
		cfg = manager.OwnConnection(cfg)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: h.server.Scheme, HTTPClient: hc, Mapper: h.mapper})
}
