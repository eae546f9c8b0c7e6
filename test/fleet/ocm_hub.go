package fleet

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"open-cluster-management.io/ocm/pkg/addon"
	placement "open-cluster-management.io/ocm/pkg/placement/controllers"
	"open-cluster-management.io/ocm/pkg/registration/hub"
)

const (
	// ocmHubNamespace is where the cluster-manager runs OCM's hub controllers.
	ocmHubNamespace = "open-cluster-management-hub"
	// ocmBootstrapNamespace, ocmBootstrapServiceAccount and ocmBootstrapClusterRole are
	// what OCM's cluster-manager chart creates for agents to join with (createBootstrapSA).
	ocmBootstrapNamespace      = "open-cluster-management"
	ocmBootstrapServiceAccount = "agent-registration-bootstrap"
	ocmBootstrapClusterRole    = "open-cluster-management:bootstrap"
)

// FleetHub is the hub cluster: its control plane, with OCM's registration hub controllers,
// placement scheduler and addon-manager running against it.
type FleetHub struct {
	*ControlPlane
	// BootstrapKubeconfigFile is what a klusterlet joins with: the bootstrap service
	// account's token, with only the rights OCM's bootstrap ClusterRole grants.
	BootstrapKubeconfigFile string
}

// startOCMHub prepares the bootstrap identity and starts OCM's registration hub
// controllers, placement scheduler and addon-manager, as the cluster-manager operator
// would. The work hub is left out: it only runs ManifestWorkReplicaSets, which nothing
// here uses.
func startOCMHub(ctx context.Context, comps *ocmComponents, h *FleetHub, bootstrapFile string) error {
	if err := addOCMFeatureGates(); err != nil {
		return err
	}
	if err := createOCMBootstrapIdentity(ctx, h.APIServer.Client); err != nil {
		return err
	}
	if err := writeOCMBootstrapKubeconfig(ctx, h.ControlPlane, bootstrapFile); err != nil {
		return err
	}
	h.BootstrapKubeconfigFile = bootstrapFile

	cfg := h.APIServer.Config
	comps.run("registration hub controllers", func(ctx context.Context, _ context.CancelFunc) error {
		// Defaults: CSR registration, no auto-approval; the harness accepts clusters the
		// way `clusteradm accept` does.
		return hub.NewHubManagerOptions().RunControllerManager(ctx, ocmControllerContext("registration-hub", cfg))
	})
	// Placements decide where GitOpsClusters and addons with a Placements install
	// strategy go.
	comps.run("placement controller", func(ctx context.Context, _ context.CancelFunc) error {
		return placement.RunControllerManager(ctx, ocmControllerContext("placement", cfg))
	})
	comps.run("addon-manager", func(ctx context.Context, _ context.CancelFunc) error {
		return addon.RunManager(ctx, ocmControllerContext("addon-manager", cfg))
	})
	return nil
}

// createOCMBootstrapIdentity creates the bootstrap ServiceAccount and binds it to OCM's
// bootstrap ClusterRole: enough to create a ManagedCluster and a CSR, nothing more.
func createOCMBootstrapIdentity(ctx context.Context, c client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocmHubNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocmBootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ocmBootstrapServiceAccount, Namespace: ocmBootstrapNamespace}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: ocmBootstrapClusterRole},
			// As in OCM's cluster-manager chart, templates/bootstrap_cluster_role.yaml.
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
				{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"},
					Verbs: []string{"create", "get", "list", "watch"}},
				{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"},
					Verbs: []string{"get", "create", "list", "watch"}},
				{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclustersets/join"},
					Verbs: []string{"create"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ocmBootstrapClusterRole + ":agent-registration"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ocmBootstrapClusterRole},
			Subjects: []rbacv1.Subject{{
				Kind: rbacv1.ServiceAccountKind, Name: ocmBootstrapServiceAccount, Namespace: ocmBootstrapNamespace,
			}},
		},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s for the OCM bootstrap identity: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// writeOCMBootstrapKubeconfig writes a kubeconfig for the bootstrap ServiceAccount with a
// token from the TokenRequest API, as `clusteradm get token` hands out.
func writeOCMBootstrapKubeconfig(ctx context.Context, hub *ControlPlane, file string) error {
	cs, err := kubernetes.NewForConfig(hub.APIServer.Config)
	if err != nil {
		return fmt.Errorf("creating a clientset for the hub: %w", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ocmBootstrapNamespace).CreateToken(ctx, ocmBootstrapServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for %s/%s: %w", ocmBootstrapNamespace, ocmBootstrapServiceAccount, err)
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["hub"] = &clientcmdapi.Cluster{
		Server:                   apiServerURL(hub),
		CertificateAuthorityData: hub.APIServer.Config.CAData,
	}
	kubeconfig.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kubeconfig.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	kubeconfig.CurrentContext = "bootstrap"
	if err := clientcmd.WriteToFile(*kubeconfig, file); err != nil {
		return fmt.Errorf("writing the bootstrap kubeconfig %s: %w", file, err)
	}
	return nil
}

// acceptCluster does what `clusteradm accept --clusters name` does once the klusterlet has
// asked to join: approve its pending CSRs and set hubAcceptsClient on its ManagedCluster.
// The CSRs are signed afterwards by the hub's kube-controller-manager.
func (h *FleetHub) acceptCluster(ctx context.Context, comps *ocmComponents, name string) error {
	cs, err := kubernetes.NewForConfig(h.APIServer.Config)
	if err != nil {
		return fmt.Errorf("creating a clientset for the hub: %w", err)
	}
	err = comps.poll(ctx, "cluster "+name+" to request joining", func(ctx context.Context) (bool, error) {
		// The ManagedCluster first: the agent stops creating it as soon as its CSR is
		// signed, so approving earlier can leave a joined agent without a cluster
		// (clusteradm accept waits for both too).
		mc := &clusterv1.ManagedCluster{}
		if err := h.APIServer.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		approved, err := approveOCMClusterCSRs(ctx, cs, name)
		if err != nil || !approved {
			return false, err
		}
		if mc.Spec.HubAcceptsClient {
			return true, nil
		}
		patch := client.MergeFrom(mc.DeepCopy())
		mc.Spec.HubAcceptsClient = true
		if err := h.APIServer.Client.Patch(ctx, mc, patch); err != nil {
			return false, fmt.Errorf("accepting ManagedCluster %s: %w", name, err)
		}
		return true, nil
	})
	return err
}

// approveOCMClusterCSRs approves the registration agent's pending CSRs for cluster and
// reports whether one is approved.
func approveOCMClusterCSRs(ctx context.Context, cs kubernetes.Interface, cluster string) (bool, error) {
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		// The registration agent's CSRs; addon CSRs also carry the addon-name label.
		LabelSelector: clusterv1.ClusterNameLabelKey + "=" + cluster + ",!" + addonv1alpha1.AddonLabelKey,
	})
	if err != nil {
		return false, fmt.Errorf("listing CSRs of %s: %w", cluster, err)
	}
	approved := false
	for i := range csrs.Items {
		csr := &csrs.Items[i]
		if ocmCSRDecided(csr) {
			approved = approved || ocmCSRApproved(csr)
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "AcceptedByFleetHarness", Message: "The fleet harness accepts every cluster it starts.",
		})
		if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				continue // changed meanwhile: the next poll sees it
			}
			return false, fmt.Errorf("approving CSR %s of %s: %w", csr.Name, cluster, err)
		}
		approved = true
	}
	return approved, nil
}

func ocmCSRDecided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

func ocmCSRApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// apiServerURL is the API server's https URL as a kubeconfig's server field wants it.
func apiServerURL(cp *ControlPlane) string {
	host := cp.APIServer.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return host
}
