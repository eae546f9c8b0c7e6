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
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/open-cluster-management-io/argocd-pull-addon/manifests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// AgentName is the agent part of the agent's hub user name,
// system:open-cluster-management:cluster:<cluster>:addon:argocd-pull:agent:argocd-pull-agent.
// It is stable so a restarted manager keeps approving the certificates agents already hold.
const AgentName = "argocd-pull-agent"

// NewAgentAddon builds the argocd-pull agent addon from the embedded chart.
func NewAgentAddon(kubeClient kubernetes.Interface, addonClient addonclient.Interface, opts *Options) (agent.AgentAddon, error) {
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
			CSRApproveCheck:   utils.DefaultCSRApprover(AgentName),
			PermissionConfig:  agentHubPermission(kubeClient),
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
	return agentAddon, nil
}

// NewManager returns an addon-framework manager for the argocd-pull addon on the hub that
// cfg points at. Start it once, in one replica: Setup does that under leader election.
func NewManager(cfg *rest.Config, opts *Options) (addonmanager.AddonManager, error) {
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the addon manager's kube client: %w", err)
	}
	addonClient, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the addon manager's addon client: %w", err)
	}
	agentAddon, err := NewAgentAddon(kubeClient, addonClient, opts)
	if err != nil {
		return nil, err
	}
	addonManager, err := addonmanager.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the addon manager: %w", err)
	}
	if err := addonManager.AddAgent(agentAddon); err != nil {
		return nil, fmt.Errorf("adding the %s agent to the addon manager: %w", apps.AddonName, err)
	}
	return addonManager, nil
}

// Setup adds the addon manager to mgr. It runs only in the elected leader: two addon
// managers would fight over the same ManifestWorks and CSRs.
func Setup(mgr ctrl.Manager, opts *Options) error {
	addonManager, err := NewManager(mgr.GetConfig(), opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(&runnable{addonManager: addonManager}); err != nil {
		return fmt.Errorf("adding the addon manager to the manager: %w", err)
	}
	return nil
}

// runnable runs an addon-framework manager as a controller-runtime Runnable.
type runnable struct {
	addonManager addonmanager.AddonManager
}

var _ manager.LeaderElectionRunnable = &runnable{}

// Start starts the addon manager's informers and controllers, which stop with ctx, and
// blocks until then as a Runnable must.
func (r *runnable) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("addon-manager")
	if err := r.addonManager.Start(ctx); err != nil {
		return fmt.Errorf("starting the %s addon manager: %w", apps.AddonName, err)
	}
	log.Info("Started the addon manager", "addon", apps.AddonName)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection makes the addon manager run in the elected leader only.
func (r *runnable) NeedLeaderElection() bool { return true }
