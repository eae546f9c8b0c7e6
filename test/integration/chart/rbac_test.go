package chart_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// writeVerbs are the verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// sensitive are the kinds the manager must never write cluster-wide: Secrets and
// ConfigMaps hold other tenants' data, a Role writer can grant itself anything it holds.
var sensitive = []struct{ group, resource string }{{"", "secrets"}, {"", "configmaps"}, {rbacv1.GroupName, "roles"}}

// clusterWideWrites are the rules of objects' ClusterRoles that write a sensitive kind,
// each "<ClusterRole>: <rule>". A ClusterRole's rules apply cluster-wide when a
// ClusterRoleBinding grants it; the chart binds its ClusterRoles that way (and the
// agents' one only per namespace, which carries no sensitive rule either).
func clusterWideWrites(objects []*unstructured.Unstructured) []string {
	GinkgoHelper()
	var out []string
	for _, o := range objects {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		cr := &rbacv1.ClusterRole{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr)).To(Succeed())
		for _, rule := range cr.Rules {
			writes := slices.ContainsFunc(rule.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) })
			for _, k := range sensitive {
				groupOK := slices.Contains(rule.APIGroups, k.group) || slices.Contains(rule.APIGroups, "*")
				resOK := slices.Contains(rule.Resources, k.resource) || slices.Contains(rule.Resources, "*")
				if writes && groupOK && resOK {
					out = append(out, cr.Name+": "+rule.String())
				}
			}
		}
	}
	return out
}

// objectsOf are the rendered objects of kind.
func objectsOf(objects []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objects), func(o *unstructured.Unstructured) bool { return o.GetKind() != kind })
}

var _ = Describe("The chart's RBAC", func() {
	It("grants no cluster-wide write on Secrets, ConfigMaps or Roles, whatever the values", func() {
		Expect(clusterWideWrites(rendered)).To(BeEmpty())
		for _, values := range []map[string]any{
			{"rbac": map[string]any{"argoNamespaces": []any{"argocd", "openshift-gitops"}}},
			{"cmp": map[string]any{"enabled": true}, "metrics": map[string]any{"service": map[string]any{"enabled": true}}},
		} {
			objects, err := framework.RenderChart(framework.ChartNamespace, values)
			Expect(err).NotTo(HaveOccurred())
			Expect(clusterWideWrites(objects)).To(BeEmpty(), "values %v", values)
		}

		By("failing on such a rule, so the check can fail")
		bad := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterRole", "metadata": map[string]any{"name": "bad"},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get", "patch"}}}}}
		Expect(clusterWideWrites([]*unstructured.Unstructured{bad})).To(HaveLen(1))
	})

	It("writes Secrets, ConfigMaps and RBAC only in the Argo CD namespaces it names, and tells the manager which", func() {
		for _, tc := range []struct {
			values map[string]any
			want   []string
		}{
			{nil, []string{framework.ChartNamespace}},
			{map[string]any{"rbac": map[string]any{"argoNamespaces": []any{"argocd", "openshift-gitops"}}}, []string{"argocd", "openshift-gitops"}},
		} {
			objects, err := framework.RenderChart(framework.ChartNamespace, tc.values)
			Expect(err).NotTo(HaveOccurred())
			var roleNamespaces []string
			for _, o := range objectsOf(objects, "Role") {
				role := &rbacv1.Role{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role)).To(Succeed())
				// Roles that write Secrets (the tenancy checks' Role only reads them).
				if slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
					return slices.Contains(r.Resources, "secrets") && slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) })
				}) {
					roleNamespaces = append(roleNamespaces, role.Namespace)
				}
			}
			Expect(roleNamespaces).To(ConsistOf(tc.want))

			cmd := managerCommand()
			Expect(cmd.ParseFlags(deploymentOf(objects).Spec.Template.Spec.Containers[0].Args[1:])).To(Succeed())
			Expect(cmd.Flags().GetStringSlice("gitopscluster-argocd-namespaces")).To(Equal(tc.want))
		}
	})

	It("names the ApplicationSet controller's ServiceAccount to the manager", func() {
		cmd := managerCommand()
		Expect(cmd.ParseFlags(renderedDeployment().Spec.Template.Spec.Containers[0].Args[1:])).To(Succeed())
		Expect(cmd.Flags().Lookup("applicationset-controller-service-account").Value.String()).To(Equal("argocd-applicationset-controller"))

		objects, err := framework.RenderChart(framework.ChartNamespace, map[string]any{
			"rbac": map[string]any{"applicationSetControllerServiceAccount": "openshift-gitops-applicationset-controller"}})
		Expect(err).NotTo(HaveOccurred())
		cmd = managerCommand()
		Expect(cmd.ParseFlags(deploymentOf(objects).Spec.Template.Spec.Containers[0].Args[1:])).To(Succeed())
		Expect(cmd.Flags().Lookup("applicationset-controller-service-account").Value.String()).To(Equal("openshift-gitops-applicationset-controller"))
	})

	It("ships the agents' hub ClusterRole with exactly the addon's rules, which the manager may bind and nothing else", func(ctx context.Context) {
		var agentRole *rbacv1.ClusterRole
		for _, o := range objectsOf(rendered, "ClusterRole") {
			if o.GetName() == addon.AgentHubRoleName {
				agentRole = &rbacv1.ClusterRole{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, agentRole)).To(Succeed())
			}
		}
		Expect(agentRole).NotTo(BeNil(), "the chart ships ClusterRole %s", addon.AgentHubRoleName)
		Expect(agentRole.Rules).To(Equal(addon.AgentHubRules()))

		By("binding no ClusterRoleBinding to it: it applies only in the cluster namespaces the manager binds it in")
		for _, o := range objectsOf(rendered, "ClusterRoleBinding") {
			crb := &rbacv1.ClusterRoleBinding{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crb)).To(Succeed())
			Expect(crb.RoleRef.Name).NotTo(Equal(addon.AgentHubRoleName))
		}

		By("letting the manager bind that ClusterRole and no other")
		for _, o := range objectsOf(rendered, "ClusterRole") {
			cr := &rbacv1.ClusterRole{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr)).To(Succeed())
			for _, rule := range cr.Rules {
				if slices.Contains(rule.Verbs, "bind") || slices.Contains(rule.Verbs, "escalate") || slices.Contains(rule.Verbs, "*") {
					Expect(rule).To(Equal(rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName},
						Resources: []string{"clusterroles"}, ResourceNames: []string{addon.AgentHubRoleName}}), "in ClusterRole %s", cr.Name)
				}
			}
		}
	})
})

var _ = Describe("The manager's addon RBAC, as the API server authorizes it", func() {
	DescribeTable("lets the addon framework change this addon's ManagedClusterAddOns and ClusterManagementAddOn only",
		func(ctx context.Context, resource, subresource, namespace, name, verb string, want bool) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   serviceAccountUser,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + framework.ChartNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "addon.open-cluster-management.io",
					Resource: resource, Subresource: subresource, Namespace: namespace, Name: name, Verb: verb},
			}}
			Expect(k8s.Create(ctx, review)).To(Succeed())
			Expect(review.Status.Allowed).To(Equal(want), "%s %s/%s %s/%s", verb, resource, subresource, namespace, name)
		},
		Entry("watch every ManagedClusterAddOn", "managedclusteraddons", "", "", "", "watch", true),
		Entry("patch its own", "managedclusteraddons", "", "cluster1", "argocd-pull", "patch", true),
		Entry("patch its own status", "managedclusteraddons", "status", "cluster1", "argocd-pull", "patch", true),
		Entry("update its ClusterManagementAddOn", "clustermanagementaddons", "", "", "argocd-pull", "update", true),
		Entry("patch another addon's", "managedclusteraddons", "", "cluster1", "application-manager", "patch", false),
		Entry("update another addon's", "managedclusteraddons", "", "cluster1", "application-manager", "update", false),
		Entry("patch another addon's status", "managedclusteraddons", "status", "cluster1", "application-manager", "patch", false),
		Entry("update another addon's finalizers", "managedclusteraddons", "finalizers", "cluster1", "application-manager", "update", false),
		Entry("update another ClusterManagementAddOn", "clustermanagementaddons", "", "", "application-manager", "update", false),
		Entry("delete its own", "managedclusteraddons", "", "cluster1", "argocd-pull", "delete", false),
		Entry("create one", "managedclusteraddons", "", "cluster1", "", "create", false),
	)
})
