package addon

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// AgentHubRoleName names the ClusterRole of the agents' hub permissions, which the hub
// chart ships (charts/argocd-pull-integration/templates/agent-hub-clusterrole.yaml,
// rules AgentHubRules), and the RoleBinding that grants it to a cluster's agent in the
// cluster's namespace.
const AgentHubRoleName = "open-cluster-management:argocd-pull:agent"

// permissionTimeout bounds the API calls of one permission sync; the framework's
// PermissionConfigFunc carries no context.
const permissionTimeout = 30 * time.Second

// agentHubPermission grants each cluster's agent, on the hub, what it needs in that
// cluster's namespace and nothing elsewhere: a RoleBinding there of the chart's fixed
// ClusterRole AgentHubRoleName, bound only to the group of that cluster's addon agent
// (system:open-cluster-management:cluster:<cluster>:addon:argocd-pull), never to the
// addon-wide group every cluster's agent is in, so cluster A's agent can never write
// cluster B's reports. A ResourceQuota bounds how many reports (and as many resource
// trees) the namespace holds (reportQuota). Both are owned by the ManagedClusterAddOn and go with it.
//
// A fixed ClusterRole, not a Role per cluster, so the manager needs no write on Roles
// anywhere: only RoleBinding writes and `bind` on that one ClusterRole (the API server's
// escalation check). The framework's RBACPermissionBuilder binds ClusterRoles only with
// ClusterRoleBindings, so the RoleBinding is built here and applied with its helper.
func agentHubPermission(kubeClient kubernetes.Interface, reportQuota int) agent.PermissionConfigFunc {
	return func(cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn) error {
		ctx, cancel := context.WithTimeout(context.Background(), permissionTimeout)
		defer cancel()
		if err := applyAgentHubRoleBinding(ctx, kubeClient, AgentHubRoleBinding(cluster.Name, addon)); err != nil {
			return err
		}
		if err := applyAgentReportQuota(ctx, kubeClient, AgentReportQuota(cluster.Name, addon, reportQuota)); err != nil {
			return fmt.Errorf("applying ResourceQuota %s/%s: %w", cluster.Name, AgentReportQuotaName, err)
		}
		return nil
	}
}

// applyAgentHubRoleBinding applies rb. A RoleBinding's roleRef cannot change: one an
// earlier version bound to a per-cluster Role of the same name is deleted and created
// anew. That Role, no longer bound, grants nothing and goes with the ManagedClusterAddOn.
func applyAgentHubRoleBinding(ctx context.Context, kubeClient kubernetes.Interface, rb *rbacv1.RoleBinding) error {
	bindings := kubeClient.RbacV1().RoleBindings(rb.Namespace)
	cur, err := bindings.Get(ctx, rb.Name, metav1.GetOptions{})
	switch {
	case err == nil && cur.RoleRef != rb.RoleRef:
		if err := bindings.Delete(ctx, rb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s of another role: %w", rb.Namespace, rb.Name, err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	if _, _, err := utils.ApplyRoleBinding(ctx, kubeClient.RbacV1(), rb); err != nil {
		return fmt.Errorf("applying RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	return nil
}

// AgentHubRules is everything an agent does on the hub, in its cluster's namespace, and
// nothing more (a rule here that the agent does not use is a grant an attacker holding a
// cluster's agent credentials would get for free):
//   - ApplicationStatusReports and ApplicationResourceTrees: its hub cache lists and
//     watches them; it writes them with server-side apply (patch, and create when one is
//     new) and deletes them. It never reads one uncached nor updates one.
//   - its own ManagedClusterAddOn, by name: it reads it (the reports' owner, and the
//     hub-credentials health check) and patches its status (the ApplicationsWatched
//     condition). It never writes its spec, which says where and how the agent is
//     installed.
//
// The hub chart's ClusterRole AgentHubRoleName carries exactly these
// (test/integration/chart compares them rule for rule, and the addon suite compares them
// against a literal list).
func AgentHubRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{
			APIGroups: []string{appsv1alpha1.GroupVersion.Group},
			Resources: []string{"applicationstatusreports", "applicationresourcetrees"},
			Verbs:     []string{"create", "patch", "delete", "list", "watch"},
		},
		{
			APIGroups:     []string{addonv1alpha1.GroupName},
			Resources:     []string{"managedclusteraddons"},
			ResourceNames: []string{apps.AddonName},
			Verbs:         []string{"get"},
		},
		{
			APIGroups:     []string{addonv1alpha1.GroupName},
			Resources:     []string{"managedclusteraddons/status"},
			ResourceNames: []string{apps.AddonName},
			Verbs:         []string{"patch"},
		},
	}
}

// AgentHubRoleBinding binds the ClusterRole AgentHubRoleName, in cluster's namespace, to
// the group of cluster's addon agent only.
func AgentHubRoleBinding(cluster string, addon *addonv1alpha1.ManagedClusterAddOn) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: agentHubObjectMeta(cluster, addon),
		RoleRef: rbacv1.RoleRef{
			APIGroup: rbacv1.GroupName,
			Kind:     "ClusterRole",
			Name:     AgentHubRoleName,
		},
		Subjects: []rbacv1.Subject{{
			APIGroup: rbacv1.GroupName,
			Kind:     rbacv1.GroupKind,
			Name:     AgentGroup(cluster),
		}},
	}
}

// AgentGroup is the hub group of cluster's argocd-pull agent: the first of the framework's
// default groups, the only one specific to the cluster.
func AgentGroup(cluster string) string {
	return agent.DefaultGroups(cluster, apps.AddonName)[0]
}

func agentHubObjectMeta(cluster string, addon *addonv1alpha1.ManagedClusterAddOn) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      AgentHubRoleName,
		Namespace: cluster,
		Labels:    map[string]string{addonv1alpha1.AddonLabelKey: apps.AddonName},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         addonv1alpha1.GroupVersion.String(),
			Kind:               "ManagedClusterAddOn",
			Name:               addon.Name,
			UID:                addon.UID,
			BlockOwnerDeletion: ptr.To(true),
		}},
	}
}
