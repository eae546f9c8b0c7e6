package addon

import (
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/klog/v2"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	operatorv1 "open-cluster-management.io/api/operator/v1"
)

// grpcServerServiceAccount is the user OCM's gRPC registration server files CSRs as on
// behalf of a cluster; the cluster's own user is then in operatorv1.CSRUsernameAnnotation.
// addon-framework's DefaultCSRApprover knows the same name but does not export it.
const grpcServerServiceAccount = "system:serviceaccount:open-cluster-management-hub:grpc-server-sa"

// agentCSRApprover approves the CSR of cluster's argocd-pull agent when the framework's
// default check passes (subject: the agent's user and groups for that cluster) and the
// CSR was requested by that cluster's own registration agent.
//
// The framework's check compares the requester with "system:open-cluster-management:" +
// cluster as a plain prefix, so the registration agent of a cluster named "prod10"
// (system:open-cluster-management:prod10:<agent>) passes it for cluster "prod1" and would
// get prod1's addon identity, and with it prod1's reports and ManagedClusterAddOn.
func agentCSRApprover() agent.CSRApproveFunc {
	return utils.UnionCSRApprover(utils.DefaultCSRApprover(AgentName), requestedByClusterItself)
}

// requestedByClusterItself says whether csr was requested by a user of cluster's
// klusterlet: system:open-cluster-management:<cluster>:<agent id>. The colon after the
// cluster name makes the comparison exact; a cluster name (a DNS label) has no colon.
func requestedByClusterItself(cluster *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn, csr *certificatesv1.CertificateSigningRequest) bool {
	requester := csr.Spec.Username
	if requester == grpcServerServiceAccount {
		requester = csr.Annotations[operatorv1.CSRUsernameAnnotation]
	}
	prefix := ClusterRequesterPrefix(cluster.Name)
	if strings.HasPrefix(requester, prefix) && len(requester) > len(prefix) {
		return true
	}
	klog.InfoS("Not approving an argocd-pull agent CSR: it was not requested by the cluster's own registration agent",
		"csr", csr.Name, "cluster", cluster.Name, "requester", requester)
	return false
}

// ClusterRequesterPrefix starts the hub user name of every identity of cluster's
// klusterlet registration agent, colon included.
func ClusterRequesterPrefix(cluster string) string {
	return "system:open-cluster-management:" + cluster + ":"
}
