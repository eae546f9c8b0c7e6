package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	commonoptions "open-cluster-management.io/ocm/pkg/common/options"
	registrationspoke "open-cluster-management.io/ocm/pkg/registration/spoke"
	workspoke "open-cluster-management.io/ocm/pkg/work/spoke"
)

// OCMAgentNamespace is where a klusterlet's agents keep their hub credentials
// (the hub-kubeconfig-secret) on the managed cluster.
const OCMAgentNamespace = "open-cluster-management-agent"

// FleetCluster is a managed cluster: its control plane, with a klusterlet's registration
// and work agents running against it.
type FleetCluster struct {
	*ControlPlane
	// HubKubeconfigDir holds what the registration agent got from the hub: kubeconfig,
	// tls.crt, tls.key (client certificate of the cluster's identity on the hub),
	// cluster-name and agent-name, as the hub-kubeconfig-secret mounted in a klusterlet pod.
	HubKubeconfigDir string
}

// ocmAgentID is the klusterlet's agent ID: the registration and work agents share it, as
// the klusterlet operator gives both the same one.
func ocmAgentID(cluster string) string { return cluster + "-klusterlet" }

// startOCMRegistrationAgent starts the klusterlet's registration agent: it creates the
// ManagedCluster and a CSR on the hub with the bootstrap kubeconfig, then, once accepted
// and signed, keeps the hub-kubeconfig-secret, the cluster lease and the addon
// registrations up to date.
func startOCMRegistrationAgent(ctx context.Context, comps *ocmComponents, c *FleetCluster, bootstrapKubeconfig string) error {
	if err := addOCMFeatureGates(); err != nil {
		return err
	}
	err := c.APIServer.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OCMAgentNamespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on %s: %w", OCMAgentNamespace, c.Name, err)
	}
	if err := os.MkdirAll(c.HubKubeconfigDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", c.HubKubeconfigDir, err)
	}
	common := ocmAgentOptions(c)
	opts := registrationspoke.NewSpokeAgentOptions()
	opts.BootstrapKubeconfig = bootstrapKubeconfig
	// The hub (and Argo CD on it) reach the cluster's API server at this URL; OCM records
	// it, with the CA, in the ManagedCluster's managedClusterClientConfigs.
	opts.SpokeExternalServerURLs = []string{apiServerURL(c.ControlPlane)}
	cfg := c.APIServer.Config
	comps.run("registration agent of "+c.Name, func(ctx context.Context, cancel context.CancelFunc) error {
		return registrationspoke.NewSpokeAgentConfig(common, opts, cancel).
			RunSpokeAgent(ctx, ocmControllerContext("registration-agent-"+c.Name, cfg))
	})
	return nil
}

// startOCMWorkAgent starts the klusterlet's work agent: it applies the ManifestWorks in the
// cluster's namespace on the hub to the cluster and reports their status back. It reads
// the hub kubeconfig the registration agent wrote, so it starts after the cluster joined.
func startOCMWorkAgent(comps *ocmComponents, c *FleetCluster, statusSyncInterval time.Duration) error {
	hubKubeconfig := filepath.Join(c.HubKubeconfigDir, "kubeconfig")
	if _, err := os.Stat(hubKubeconfig); err != nil {
		return fmt.Errorf("no hub kubeconfig for the work agent of %s: %w", c.Name, err)
	}
	common := ocmAgentOptions(c)
	opts := workspoke.NewWorkloadAgentOptions()
	opts.WorkloadSourceConfig = hubKubeconfig
	if statusSyncInterval > 0 {
		opts.StatusSyncInterval = statusSyncInterval
	}
	cfg := c.APIServer.Config
	comps.run("work agent of "+c.Name, func(ctx context.Context, _ context.CancelFunc) error {
		return workspoke.NewWorkAgentConfig(common, opts).RunWorkloadAgent(ctx, ocmControllerContext("work-agent-"+c.Name, cfg))
	})
	return nil
}

func ocmAgentOptions(c *FleetCluster) *commonoptions.AgentOptions {
	common := commonoptions.NewAgentOptions()
	common.SpokeClusterName = c.Name
	common.AgentID = ocmAgentID(c.Name)
	common.ComponentNamespace = OCMAgentNamespace
	common.HubKubeconfigDir = c.HubKubeconfigDir
	common.HubKubeconfigFile = filepath.Join(c.HubKubeconfigDir, "kubeconfig")
	return common
}

// waitForManagedClusterCondition waits until the hub reports condition True on cluster.
func waitForManagedClusterCondition(ctx context.Context, comps *ocmComponents, hub client.Client, cluster, condition string) error {
	return comps.poll(ctx, fmt.Sprintf("ManagedCluster %s to be %s", cluster, condition), func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(mc.Status.Conditions, condition), nil
	})
}
