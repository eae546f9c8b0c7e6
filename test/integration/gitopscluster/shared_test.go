package gitopscluster_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
)

// secretOwners are the "<namespace>/<name>" of the GitOpsClusters a cluster Secret names
// as owners: by annotation, with the label of the same key beside it.
func secretOwners(s *corev1.Secret) []string {
	var out []string
	for k, v := range s.Annotations {
		if strings.HasPrefix(k, gitopscluster.OwnerPrefix+"/") && s.Labels[k] == "true" {
			out = append(out, v)
		}
	}
	return out
}

// expectOwners waits until the cluster Secret exists with exactly owners, and returns it.
func expectOwners(ctx context.Context, key client.ObjectKey, owners ...string) *corev1.Secret {
	GinkgoHelper()
	var s *corev1.Secret
	Eventually(func(g Gomega) []string {
		s = getSecret(ctx, key)(g)
		return secretOwners(s)
	}, timeout, interval).Should(ConsistOf(owners))
	return s
}

func expectMessage(ctx context.Context, key client.ObjectKey, msg string) {
	GinkgoHelper()
	Eventually(func(g Gomega) string { return getGitOpsCluster(ctx, key)(g).Status.Message }, timeout, interval).
		Should(Equal(msg))
}

var _ = Describe("GitOpsClusters over overlapping Placements", func() {
	var (
		argoNs, teamNs string
		c1, c2, c3     string
	)

	BeforeEach(func(ctx context.Context) {
		argoNs, teamNs = unique("argocd"), unique("team")
		createNamespace(ctx, argoNs)
		createNamespace(ctx, teamNs)
		c1, c2, c3 = unique("cluster"), unique("cluster"), unique("cluster")
		createManagedCluster(ctx, c1, map[string]string{"env": "prod"})
		createManagedCluster(ctx, c2, map[string]string{"env": "shared"})
		createManagedCluster(ctx, c3, map[string]string{"env": "dev"})
	})

	It("share the Secret of a cluster both select until the last one stops selecting it", func(ctx context.Context) {
		// One GitOpsCluster in the Argo CD namespace, one in a team's namespace: both
		// register their clusters with the same Argo CD.
		createPlacement(ctx, argoNs, "first")
		setDecisions(ctx, argoNs, "first", c1, c2)
		createPlacement(ctx, teamNs, "second")
		setDecisions(ctx, teamNs, "second", c2, c3)
		a := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "a", argoNs, placementRef("first"), ptr.To(true)))
		b := client.ObjectKeyFromObject(createGitOpsCluster(ctx, teamNs, "b", argoNs, placementRef("second"), ptr.To(true)))

		expectPhase(ctx, a, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectPhase(ctx, b, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectMessage(ctx, a, addedMessage(argoNs, c1, c2))
		expectMessage(ctx, b, addedMessage(argoNs, c2, c3))
		shared := expectOwners(ctx, secretKey(argoNs, c2), a.String(), b.String())
		Eventually(func(g Gomega) map[string]string { return getSecret(ctx, secretKey(argoNs, c2))(g).Labels }, timeout, interval).
			Should(SatisfyAll(
				HaveKeyWithValue("env", "shared"),
				HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"),
				HaveKeyWithValue("apps.open-cluster-management.io/cluster-name", c2),
			))
		Expect(shared.Data).To(Equal(map[string][]byte{"name": []byte(c2), "server": []byte("https://" + c2 + "-control-plane")}))
		expectOwners(ctx, secretKey(argoNs, c1), a.String())
		expectOwners(ctx, secretKey(argoNs, c3), b.String())

		By("the shared cluster leaving the first Placement")
		setDecisions(ctx, argoNs, "first", c1)
		expectMessage(ctx, a, addedMessage(argoNs, c1))
		Expect(expectOwners(ctx, secretKey(argoNs, c2), b.String()).UID).To(Equal(shared.UID))

		By("the shared cluster coming back")
		setDecisions(ctx, argoNs, "first", c1, c2)
		Expect(expectOwners(ctx, secretKey(argoNs, c2), a.String(), b.String()).UID).To(Equal(shared.UID))

		By("deleting the first GitOpsCluster")
		Expect(k8s.Delete(ctx, &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})).To(Succeed())
		expectGone(ctx, &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})
		expectGone(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: c1 + "-cluster-secret"}})
		Expect(expectOwners(ctx, secretKey(argoNs, c2), b.String()).UID).To(Equal(shared.UID))
		expectPhase(ctx, b, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)

		By("deleting the second GitOpsCluster")
		Expect(k8s.Delete(ctx, &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}})).To(Succeed())
		expectGone(ctx, shared)
		expectGone(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: c3 + "-cluster-secret"}})
		Eventually(func(g Gomega) { g.Expect(ourSecrets(ctx, g, argoNs)).To(BeEmpty()) }, timeout, interval).Should(Succeed())
	})

	It("write nothing, to the shared Secret or the generator configuration, when nothing changed", func(ctx context.Context) {
		createPlacement(ctx, argoNs, "first")
		setDecisions(ctx, argoNs, "first", c1, c2)
		createPlacement(ctx, argoNs, "second")
		setDecisions(ctx, argoNs, "second", c2)
		a := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "a", argoNs, placementRef("first"), ptr.To(true)))
		b := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "b", argoNs, placementRef("second"), ptr.To(true)))
		expectPhase(ctx, a, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectPhase(ctx, b, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectOwners(ctx, secretKey(argoNs, c2), a.String(), b.String())
		Eventually(func(g Gomega) map[string]string { return getSecret(ctx, secretKey(argoNs, c2))(g).Labels }, timeout, interval).
			Should(HaveKeyWithValue("env", "shared"))

		before := settled(a, b)
		versions := resourceVersions(ctx, a, argoNs)
		versions["gitopscluster/b"] = getGitOpsCluster(ctx, b)(Default).ResourceVersion
		sent := writes.InNamespace(argoNs)

		By("requeueing both through unrelated changes to their PlacementDecisions and to the generator ConfigMap")
		for _, p := range []string{"first", "second"} {
			pd := &clusterv1beta1.PlacementDecision{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: p + "-decision-1"}, pd)).To(Succeed())
			pd.Annotations = map[string]string{"touched": "yes"}
			Expect(k8s.Update(ctx, pd)).To(Succeed())
		}
		// Every GitOpsCluster of the namespace hears of a change to the shared ConfigMap.
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: "ocm-placement-generator"}, cm)).To(Succeed())
		cm.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		versions["cm/ocm"] = cm.ResourceVersion

		after := settled(a, b)
		Expect(after[0]).To(BeNumerically(">", before[0]), "a was reconciled")
		Expect(after[1]).To(BeNumerically(">", before[1]), "b was reconciled")
		got := resourceVersions(ctx, a, argoNs)
		got["gitopscluster/b"] = getGitOpsCluster(ctx, b)(Default).ResourceVersion
		Expect(got).To(Equal(versions))
		Expect(writes.InNamespace(argoNs)).To(Equal(sent), "API writes by the controller for unchanged input")
		role := &rbacv1.Role{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: argoNs + "-applicationset-controller-placement"}, role)).To(Succeed())
		Expect(role.Rules).To(HaveLen(1))
	})

	It("keep a shared Secret when one is deleted while no manager runs, with or without its finalizer", func(ctx context.Context) {
		createPlacement(ctx, argoNs, "all")
		setDecisions(ctx, argoNs, "all", c2)
		createPlacement(ctx, argoNs, "first")
		setDecisions(ctx, argoNs, "first", c1, c2)
		createPlacement(ctx, argoNs, "third")
		setDecisions(ctx, argoNs, "third", c2, c3)
		keep := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "keep", argoNs, placementRef("all"), ptr.To(true)))
		a := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "a", argoNs, placementRef("first"), ptr.To(true)))
		x := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "x", argoNs, placementRef("third"), ptr.To(true)))
		for _, k := range []client.ObjectKey{keep, a, x} {
			expectPhase(ctx, k, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		}
		shared := expectOwners(ctx, secretKey(argoNs, c2), keep.String(), a.String(), x.String())
		onlyA := expectOwners(ctx, secretKey(argoNs, c1), a.String())
		onlyX := expectOwners(ctx, secretKey(argoNs, c3), x.String())

		By("stopping the manager, then deleting a (its finalizer waits) and x (its finalizer removed by hand)")
		start := stopManager()
		Expect(k8s.Delete(ctx, &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})).To(Succeed())
		gx := getGitOpsCluster(ctx, x)(Default)
		patch := client.MergeFrom(gx.DeepCopy())
		controllerutil.RemoveFinalizer(gx, appsv1beta1.GitOpsClusterFinalizer)
		Expect(k8s.Patch(ctx, gx, patch)).To(Succeed())
		Expect(k8s.Delete(ctx, gx)).To(Succeed())
		expectGone(ctx, gx)
		Expect(getGitOpsCluster(ctx, a)(Default).DeletionTimestamp).NotTo(BeNil())

		By("starting the manager again")
		start()
		expectGone(ctx, &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})
		expectGone(ctx, onlyA)
		expectGone(ctx, onlyX)
		Expect(expectOwners(ctx, secretKey(argoNs, c2), keep.String()).UID).To(Equal(shared.UID))
		expectPhase(ctx, keep, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
	})

	It("adopt the Secrets an earlier version wrote for one GitOpsCluster, and share them", func(ctx context.Context) {
		createPlacement(ctx, argoNs, "first")
		setDecisions(ctx, argoNs, "first", c1)
		createPlacement(ctx, teamNs, "second")
		setDecisions(ctx, teamNs, "second", c1)

		By("stopping the manager and writing what the earlier version left: a GitOpsCluster and its Secret")
		start := stopManager()
		gc := &appsv1beta1.GitOpsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: "a", Finalizers: []string{appsv1beta1.GitOpsClusterFinalizer}},
			Spec: appsv1beta1.GitOpsClusterSpec{
				ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNs}, PlacementRef: placementRef("first"),
			},
		}
		Expect(k8s.Create(ctx, gc)).To(Succeed())
		a := client.ObjectKeyFromObject(gc)
		old := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: argoNs, Name: c1 + "-cluster-secret",
				Labels: map[string]string{
					"argocd.argoproj.io/secret-type":                          "cluster",
					"apps.open-cluster-management.io/cluster-name":            c1,
					"app.kubernetes.io/managed-by":                            "argocd-pull-addon",
					"apps.open-cluster-management.io/gitopscluster-namespace": argoNs,
					"apps.open-cluster-management.io/gitopscluster-name":      "a",
				},
				Annotations: map[string]string{"apps.open-cluster-management.io/gitopscluster": argoNs + "/a"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps.open-cluster-management.io/v1beta1", Kind: "GitOpsCluster",
					Name: "a", UID: gc.UID, BlockOwnerDeletion: ptr.To(true),
				}},
			},
			StringData: map[string]string{"name": c1, "server": "https://" + c1 + "-control-plane"},
		}
		Expect(k8s.Create(ctx, old)).To(Succeed())
		start()

		expectPhase(ctx, a, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		s := expectOwners(ctx, secretKey(argoNs, c1), a.String())
		Expect(s.UID).To(Equal(old.UID))
		Expect(s.Labels).NotTo(HaveKey("apps.open-cluster-management.io/gitopscluster-namespace"))
		Expect(s.Labels).NotTo(HaveKey("apps.open-cluster-management.io/gitopscluster-name"))
		Expect(s.Annotations).NotTo(HaveKey("apps.open-cluster-management.io/gitopscluster"))
		Expect(s.OwnerReferences).To(BeEmpty())

		By("a second GitOpsCluster selecting the same cluster")
		b := client.ObjectKeyFromObject(createGitOpsCluster(ctx, teamNs, "b", argoNs, placementRef("second"), ptr.To(true)))
		expectPhase(ctx, b, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Expect(expectOwners(ctx, secretKey(argoNs, c1), a.String(), b.String()).UID).To(Equal(old.UID))

		By("deleting the GitOpsCluster that created it")
		Expect(k8s.Delete(ctx, gc)).To(Succeed())
		expectGone(ctx, gc)
		Expect(expectOwners(ctx, secretKey(argoNs, c1), b.String()).UID).To(Equal(old.UID))
	})

	DescribeTable("report a Secret of a cluster's name that no GitOpsCluster created, on each of them, and never touch it",
		func(ctx context.Context, labels map[string]string) {
			createPlacement(ctx, argoNs, "first")
			setDecisions(ctx, argoNs, "first", c1, c2)
			createPlacement(ctx, teamNs, "second")
			setDecisions(ctx, teamNs, "second", c2)
			squatter := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: c2 + "-cluster-secret", Labels: labels},
				StringData: map[string]string{"name": c2, "server": "https://real.example.com", "config": "{}"},
			}
			Expect(k8s.Create(ctx, squatter)).To(Succeed())
			a := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "a", argoNs, placementRef("first"), ptr.To(true)))
			b := client.ObjectKeyFromObject(createGitOpsCluster(ctx, teamNs, "b", argoNs, placementRef("second"), ptr.To(true)))
			for _, k := range []client.ObjectKey{a, b} {
				got := expectPhase(ctx, k, appsv1beta1.PhaseFailed, appsv1beta1.ReasonClusterSecretConflict)
				Expect(got.Status.Message).To(Equal(fmt.Sprintf(
					"Not registered, a Secret of the same name that no GitOpsCluster created exists: cluster %s: Secret %s/%s-cluster-secret",
					c2, argoNs, c2)))
				expectEvent(ctx, k, corev1.EventTypeWarning, appsv1beta1.ReasonClusterSecretConflict)
			}
			expectOwners(ctx, secretKey(argoNs, c1), a.String())

			By("deleting both GitOpsClusters")
			for _, k := range []types.NamespacedName{a, b} {
				gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
				Expect(k8s.Delete(ctx, gc)).To(Succeed())
				expectGone(ctx, gc)
			}
			expectGone(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: c1 + "-cluster-secret"}})
			after := getSecret(ctx, client.ObjectKeyFromObject(squatter))(Default)
			Expect(after.ResourceVersion).To(Equal(squatter.ResourceVersion))
		},
		Entry("made by hand", nil),
		Entry("carrying this controller's managed-by label but naming no GitOpsCluster",
			map[string]string{"app.kubernetes.io/managed-by": "argocd-pull-addon", "argocd.argoproj.io/secret-type": "cluster"}),
	)
})
