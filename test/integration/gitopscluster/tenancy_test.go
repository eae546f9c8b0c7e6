package gitopscluster_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
)

// nothingWritten checks that ns holds no Secret, ConfigMap, Role or RoleBinding.
func nothingWritten(ctx context.Context, ns string) func(Gomega) {
	return func(g Gomega) {
		for _, list := range []client.ObjectList{&corev1.SecretList{}, &corev1.ConfigMapList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list).To(HaveField("Items", BeEmpty()), "%T in %s", list, ns)
		}
	}
}

var _ = Describe("GitOpsCluster tenancy", func() {
	It("writes only in the Argo CD namespaces the manager is given, binding the ApplicationSet controller it is told", func(ctx context.Context) {
		allowed, other, team := unique("argocd"), unique("victim"), unique("team")
		for _, ns := range []string{allowed, other, team} {
			createNamespace(ctx, ns)
		}
		c1 := unique("cluster")
		createManagedCluster(ctx, c1, nil)
		createPlacement(ctx, team, "all")
		setDecisions(ctx, team, "all", c1)

		By("running the manager as the chart configures it")
		stopManager()
		startManagerWith(gitopscluster.Options{ArgoNamespaces: []string{allowed},
			ApplicationSetControllerServiceAccount: "openshift-gitops-applicationset-controller"})
		DeferCleanup(func() {
			Expect(stopMgr()).To(Succeed())
			stopMgr = nil // stopManager's cleanup starts the suite's manager again
		})

		By("refusing another namespace, with a condition and an Event, writing nothing there")
		bad := client.ObjectKeyFromObject(createGitOpsCluster(ctx, team, "elsewhere", other, placementRef("all"), ptr.To(true)))
		got := expectPhase(ctx, bad, appsv1beta1.PhaseFailed, appsv1beta1.ReasonArgoNamespaceNotAllowed)
		expectCondition(got, appsv1beta1.ConditionArgoNamespaceFound, metav1.ConditionFalse, appsv1beta1.ReasonArgoNamespaceNotAllowed)
		Expect(got.Status.Message).To(And(ContainSubstring(other), ContainSubstring(allowed), ContainSubstring("rbac.argoNamespaces")))
		expectEvent(ctx, bad, corev1.EventTypeWarning, appsv1beta1.ReasonArgoNamespaceNotAllowed)
		Consistently(nothingWritten(ctx, other), "2s", interval).Should(Succeed())

		By("refusing its own namespace too when the chart does not name it: the manager may not write there")
		own := client.ObjectKeyFromObject(createGitOpsCluster(ctx, team, "own", team, placementRef("all"), ptr.To(true)))
		expectPhase(ctx, own, appsv1beta1.PhaseFailed, appsv1beta1.ReasonArgoNamespaceNotAllowed)

		By("registering the clusters in an allowed namespace, from a team's GitOpsCluster")
		good := client.ObjectKeyFromObject(createGitOpsCluster(ctx, team, "gitops", allowed, placementRef("all"), ptr.To(true)))
		expectPhase(ctx, good, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		getSecret(ctx, secretKey(allowed, c1))(Default)
		rb := &rbacv1.RoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: allowed, Name: gitopscluster.RoleName(allowed)}, rb)).To(Succeed())
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind,
			Name: "openshift-gitops-applicationset-controller", Namespace: allowed}}))

		By("leaving the refused GitOpsCluster's namespace untouched still")
		nothingWritten(ctx, other)(Default)
	})

	It("adopts no generator ConfigMap, Role or RoleBinding it did not write: a conflict, left alone", func(ctx context.Context) {
		argoNs := unique("argocd")
		createNamespace(ctx, argoNs)
		c1 := unique("cluster")
		createManagedCluster(ctx, c1, nil)
		createPlacement(ctx, argoNs, "all")
		setDecisions(ctx, argoNs, "all", c1)

		// Someone's own objects of the names the generator configuration uses.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: gitopscluster.ConfigMapACMPlacement},
			Data: map[string]string{"mine": "yes"}}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: gitopscluster.RoleName(argoNs)},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		Expect(k8s.Create(ctx, role)).To(Succeed())

		gc := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true)))
		got := expectPhase(ctx, gc, appsv1beta1.PhaseFailed, appsv1beta1.ReasonGeneratorConfigConflict)
		expectCondition(got, appsv1beta1.ConditionGeneratorConfigured, metav1.ConditionFalse, appsv1beta1.ReasonGeneratorConfigConflict)
		Expect(got.Status.Message).To(And(ContainSubstring("ConfigMap "+argoNs+"/"+gitopscluster.ConfigMapACMPlacement),
			ContainSubstring("Role "+argoNs+"/"+gitopscluster.RoleName(argoNs))))
		expectEvent(ctx, gc, corev1.EventTypeWarning, appsv1beta1.ReasonGeneratorConfigConflict)

		By("leaving them exactly as they were, and writing the rest")
		for _, o := range []client.Object{cm, role} {
			cur := o.DeepCopyObject().(client.Object)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), cur)).To(Succeed())
			Expect(cur.GetResourceVersion()).To(Equal(o.GetResourceVersion()), "%T %s", o, o.GetName())
		}
		getSecret(ctx, secretKey(argoNs, c1))(Default)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: gitopscluster.ConfigMapOCMPlacementGenerator}, &corev1.ConfigMap{})).To(Succeed())

		By("taking them over once labelled as a GitOpsCluster's")
		for _, o := range []client.Object{cm, role} {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			o.SetLabels(map[string]string{apps.LabelManagedBy: apps.ManagedByValue})
			Expect(k8s.Update(ctx, o)).To(Succeed())
		}
		expectPhase(ctx, gc, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Eventually(func(g Gomega) []rbacv1.PolicyRule {
			cur := &rbacv1.Role{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(role), cur)).To(Succeed())
			return cur.Rules
		}, timeout, interval).Should(ConsistOf(HaveField("Resources", []string{"placementdecisions"})))
	})
})
