package chart_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// tenantKinds are the resources of our kinds a namespace's users see through Kubernetes'
// own roles.
var tenantKinds = []string{"multiclusterapplicationsetreports", "applicationstatusreports", "applicationresourcetrees", "gitopsclusters"}

// allowed asks the API server whether user may verb resource (of our group) in namespace.
func allowed(ctx context.Context, user, verb, resource, namespace string) bool {
	GinkgoHelper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: appsv1alpha1.GroupVersion.Group,
			Resource: resource, Namespace: namespace, Verb: verb},
	}}
	Expect(k8s.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}

// bindInNamespace binds Kubernetes' ClusterRole role to user in namespace, as a
// namespace's owner does for a team.
func bindInNamespace(ctx context.Context, namespace, role, user string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
}

var _ = Describe("The chart's tenant roles, aggregated by kube-controller-manager into view, edit and admin", func() {
	It("let a namespace's admin, editor and viewer read our kinds there, write none of them, and see nothing of another namespace", func(ctx context.Context) {
		teamA, teamB := "tenants-team-a", "tenants-team-b"
		for _, ns := range []string{teamA, teamB} {
			Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		users := map[string]string{"admin": "alice", "edit": "erin", "view": "victor"}
		for role, user := range users {
			bindInNamespace(ctx, teamA, role, user)
		}

		By("each reads every kind in its namespace, once the roles are aggregated")
		Eventually(func(g Gomega) {
			for _, user := range users {
				for _, resource := range tenantKinds {
					for _, verb := range []string{"get", "list", "watch"} {
						g.Expect(allowed(ctx, user, verb, resource, teamA)).To(BeTrue(), "%s %s %s in %s", user, verb, resource, teamA)
					}
				}
			}
		}, timeout, interval).Should(Succeed())

		By("none reads them in another namespace, nor writes them in its own")
		for role, user := range users {
			for _, resource := range tenantKinds {
				for _, verb := range []string{"get", "list", "watch"} {
					Expect(allowed(ctx, user, verb, resource, teamB)).To(BeFalse(), "%s (%s in %s) %s %s in %s", user, role, teamA, verb, resource, teamB)
				}
				for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
					Expect(allowed(ctx, user, verb, resource, teamA)).To(BeFalse(), "%s (%s) %s %s", user, role, verb, resource)
				}
			}
		}

		By("the grant comes from the chart's tenant role: the rules of our group in view are exactly its rule")
		view := &rbacv1.ClusterRole{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "view"}, view)).To(Succeed())
		var ours []rbacv1.PolicyRule
		for _, r := range view.Rules {
			for _, g := range r.APIGroups {
				if g == appsv1alpha1.GroupVersion.Group {
					ours = append(ours, r)
				}
			}
		}
		Expect(ours).To(ConsistOf(HaveField("Resources", ConsistOf(tenantKinds))), "view's rules of our group")
	})
})
