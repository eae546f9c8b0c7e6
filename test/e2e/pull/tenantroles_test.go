//go:build e2e

package pull_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// tenantRolesSpecs read the guestbook's reports as the namespaces' admins would, through
// Kubernetes' admin role and the chart's tenant role aggregated into it (docs/security.md,
// "Roles for tenants").
func tenantRolesSpecs() {
	// as is a hub client acting as user, so the hub's RBAC decides as for that user.
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(theFleet.Hub.APIServer.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		return c
	}
	// bindAdmin binds Kubernetes' admin ClusterRole to user in namespace, as a hub's
	// platform team hands a namespace to a team.
	bindAdmin := func(ctx SpecContext, namespace, user string) {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user + "-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		Expect(hub.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hub.Delete(ctx, binding))).To(Succeed()) })
	}

	It("lets the admin of the ApplicationSet's namespace read its report, and not another namespace's reports", func(ctx SpecContext) {
		const otherTeam = "tenant-roles-other-team"
		Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherTeam}})).To(Succeed())
		bindAdmin(ctx, argoNS, "argocd-team-admin")
		bindAdmin(ctx, clusters[0], clusters[0]+"-owner")
		admin := as("argocd-team-admin")

		By("the admin of " + argoNS + " gets and lists the guestbook's MulticlusterApplicationSetReport there")
		// kube-controller-manager aggregates the chart's role into admin.
		Eventually(func(g Gomega) {
			report := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: appSetName}, report)).To(Succeed())
			g.Expect(report.Statuses.ClusterConditions).NotTo(BeEmpty(), "what the manager wrote")
			list := &appsv1alpha1.MulticlusterApplicationSetReportList{}
			g.Expect(admin.List(ctx, list, client.InNamespace(argoNS))).To(Succeed())
			g.Expect(list.Items).To(ContainElement(HaveField("Name", appSetName)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("it may not read reports in another team's namespace, nor the agents' in a cluster namespace")
		err := admin.List(ctx, &appsv1alpha1.MulticlusterApplicationSetReportList{}, client.InNamespace(otherTeam))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing %s's reports: %v", otherTeam, err)
		err = admin.List(ctx, &appsv1alpha1.ApplicationStatusReportList{}, client.InNamespace(clusters[0]))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing %s's ApplicationStatusReports: %v", clusters[0], err)

		By("nor change its own report: the manager writes it")
		report := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: appSetName}, report)).To(Succeed())
		report.Labels = map[string]string{"edited-by": "tenant"}
		Expect(apierrors.IsForbidden(admin.Update(ctx, report))).To(BeTrue())

		By("the admin of a cluster namespace reads the agent's ApplicationStatusReports there")
		Eventually(func(g Gomega) {
			list := &appsv1alpha1.ApplicationStatusReportList{}
			g.Expect(as(clusters[0]+"-owner").List(ctx, list, client.InNamespace(clusters[0]))).To(Succeed())
			g.Expect(list.Items).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
}
