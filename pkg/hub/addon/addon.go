// Package addon is the hub half of the argocd-pull addon: the addon-framework wiring that
// renders the agent (manifests/charts/argocd-pull-agent) for every enabled managed
// cluster, registers the agent with the hub (client certificate, CSR approval, hub RBAC in
// the cluster's namespace) and reads the agent's health from its Lease.
package addon

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/open-cluster-management-io/argocd-pull-addon/manifests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// AgentName is the agent part of the agent's hub user name,
// system:open-cluster-management:cluster:<cluster>:addon:argocd-pull:agent:argocd-pull-agent.
// It is stable so a restarted manager keeps approving the certificates agents already hold.
const AgentName = "argocd-pull-agent"

// NewAgentAddon builds the argocd-pull agent addon from the embedded chart, rendered once
// per cluster and set of inputs.
func NewAgentAddon(kubeClient kubernetes.Interface, addonClient addonclient.Interface, opts *Options) (*RenderCache, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	configGetter := utils.NewAddOnDeploymentConfigGetter(addonClient)
	agentAddon, err := addonfactory.NewAgentAddonFactory(apps.AddonName, manifests.AgentChartFS, manifests.AgentChartDir).
		WithConfigGVRs(utils.AddOnDeploymentConfigGVR).
		WithGetValuesFuncs(opts.getValuesFuncs(configGetter)...).
		WithAgentInstallNamespace(agentInstallNamespace(configGetter)).
		WithAgentRegistrationOption(&agent.RegistrationOption{
			CSRConfigurations: agent.KubeClientSignerConfigurations(apps.AddonName, AgentName),
			CSRApproveCheck:   agentCSRApprover(),
			PermissionConfig:  agentHubPermission(kubeClient, opts.AgentReportQuota),
		}).
		WithAgentHealthProber(&agent.HealthProber{Type: agent.HealthProberTypeLease}).
		// The image-registries annotation of a ManagedCluster mirrors the agent image.
		WithAgentDeployTriggerClusterFilter(utils.ClusterImageRegistriesAnnotationChanged).
		// Strict rendering turns a missing value into an error instead of an empty argument.
		WithHelmEngineStrict().
		BuildHelmAgentAddon()
	if err != nil {
		return nil, fmt.Errorf("building the %s agent addon: %w", apps.AddonName, err)
	}
	return NewRenderCache(agentAddon), nil
}

// NewManager returns an addon-framework manager for the argocd-pull addon on the hub that
// cfg points at, and the agent's render cache. Start it once, in one replica: Setup does
// that under leader election.
func NewManager(cfg *rest.Config, opts *Options) (addonmanager.AddonManager, *RenderCache, error) {
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the addon manager's kube client: %w", err)
	}
	addonClient, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the addon manager's addon client: %w", err)
	}
	agentAddon, err := NewAgentAddon(kubeClient, addonClient, opts)
	if err != nil {
		return nil, nil, err
	}
	addonManager, err := addonmanager.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the addon manager: %w", err)
	}
	if err := addonManager.AddAgent(agentAddon); err != nil {
		return nil, nil, fmt.Errorf("adding the %s agent to the addon manager: %w", apps.AddonName, err)
	}
	return addonManager, agentAddon, nil
}

// Setup adds the addon manager to mgr and returns the agent's render cache. It runs only
// in the elected leader: two addon managers would fight over the same ManifestWorks and
// CSRs.
func Setup(mgr ctrl.Manager, opts *Options) (*RenderCache, error) {
	addonManager, renders, err := NewManager(mgr.GetConfig(), opts)
	if err != nil {
		return nil, err
	}
	r := &runnable{addonManager: addonManager, renders: renders, informers: mgr.GetCache()}
	readMetricsFrom(mgr.GetCache(), opts.AgentReportQuota)
	if err := mgr.Add(r); err != nil {
		return nil, fmt.Errorf("adding the addon manager to the manager: %w", err)
	}
	return renders, nil
}

// runnable runs an addon-framework manager as a controller-runtime Runnable.
type runnable struct {
	addonManager addonmanager.AddonManager
	renders      *RenderCache
	// informers is the manager's cache; its ManagedClusterAddOns (this addon's only) tell
	// when a cluster's rendering can go.
	informers crcache.Informers
}

var _ manager.LeaderElectionRunnable = &runnable{}

// Start starts the addon manager's informers and controllers, which stop with ctx, and
// blocks until then as a Runnable must.
func (r *runnable) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("addon-manager")
	if err := r.forgetRenderingsOfDeletedAddons(ctx); err != nil {
		return err
	}
	if err := r.addonManager.Start(ctx); err != nil {
		return fmt.Errorf("starting the %s addon manager: %w", apps.AddonName, err)
	}
	log.Info("Started the addon manager", "addon", apps.AddonName)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection makes the addon manager run in the elected leader only.
func (r *runnable) NeedLeaderElection() bool { return true }

// forgetRenderingsOfDeletedAddons drops a cluster's cached agent rendering when its
// ManagedClusterAddOn is deleted (the addon disabled, or the cluster and its namespace
// gone), so the cache holds no more clusters than the fleet has.
func (r *runnable) forgetRenderingsOfDeletedAddons(ctx context.Context) error {
	informer, err := r.informers.GetInformer(ctx, &addonv1alpha1.ManagedClusterAddOn{})
	if err != nil {
		return fmt.Errorf("getting the ManagedClusterAddOn informer: %w", err)
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			deleted, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
			if !ok {
				return
			}
			if cluster, _, err := toolscache.SplitMetaNamespaceKey(key); err == nil {
				r.renders.Forget(cluster, deleted.UID)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching ManagedClusterAddOn deletions: %w", err)
	}
	return nil
}
