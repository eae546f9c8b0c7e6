//go:build e2e

package pull_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
)

// Two GitOpsClusters in argocd whose Placements decide on the same cluster, as two teams
// registering their clusters with one Argo CD would have them: both succeed and share the
// cluster's Secret, which outlives the first one deleted and goes with the last.
//
// The scenario selects sharedCluster by a label of its own, which no other scenario's
// Placement selects (and that cluster is in no Placement of theirs that outlives them), so
// the Secret's owners are this scenario's GitOpsClusters only. It has its own Placements
// and GitOpsClusters, binds the "global" ManagedClusterSet when no other scenario did, and
// removes all of that at the end.
const sharedClusterLabel = "e2e.argocd-pull/gitopsclusters"

var sharedCluster = hubRenderedCluster

var _ = Describe("Two GitOpsClusters over overlapping Placements", Ordered, func() {
	teams := []string{"team-a", "team-b"}
	importer := func(team string) types.NamespacedName {
		return types.NamespacedName{Namespace: argoNS, Name: team + "-importer"}
	}
	secretKey := client.ObjectKey{Namespace: argoNS, Name: sharedCluster + "-cluster-secret"}
	// owners are the GitOpsClusters the cluster Secret names as owners.
	owners := func(s *corev1.Secret) []string {
		var out []string
		for k, v := range s.Annotations {
			if strings.HasPrefix(k, gitopscluster.OwnerPrefix+"/") && s.Labels[k] == "true" {
				out = append(out, v)
			}
		}
		return out
	}
	var secretUID types.UID

	BeforeAll(func(ctx SpecContext) {
		By("labelling " + sharedCluster + " " + sharedClusterLabel + "=true")
		setClusterLabel(ctx, sharedCluster, sharedClusterLabel, "true")
		DeferCleanup(func(ctx SpecContext) { setClusterLabel(ctx, sharedCluster, sharedClusterLabel, "") })

		By("binding the global ManagedClusterSet to argocd")
		bindGlobalClusterSet(ctx)

		By("creating a Placement and a GitOpsCluster per team, both deciding on " + sharedCluster)
		for _, team := range teams {
			placement := &clusterv1beta1.Placement{
				ObjectMeta: metav1.ObjectMeta{Name: team + "-placement", Namespace: argoNS},
				Spec: clusterv1beta1.PlacementSpec{
					ClusterSets: []string{"global"},
					Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
						LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{sharedClusterLabel: "true"}},
					}}},
				},
			}
			gc := &appsv1beta1.GitOpsCluster{
				ObjectMeta: metav1.ObjectMeta{Name: importer(team).Name, Namespace: argoNS},
				Spec: appsv1beta1.GitOpsClusterSpec{
					ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNS},
					PlacementRef: &corev1.ObjectReference{
						APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement", Name: placement.Name,
					},
					CreateBlankClusterSecrets: ptr.To(true),
				},
			}
			for _, obj := range []client.Object{placement, gc} {
				Expect(hub.Create(ctx, obj)).To(Succeed())
				DeferCleanup(func(ctx SpecContext) {
					Expect(client.IgnoreNotFound(hub.Delete(ctx, obj))).To(Succeed())
					Eventually(func() bool {
						return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
					}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "%T %s is not gone", obj, obj.GetName())
				}, NodeTimeout(2*time.Minute))
			}
		}
	}, NodeTimeout(3*time.Minute))

	It("has both GitOpsClusters successful, sharing the cluster's Secret", func(ctx SpecContext) {
		start := time.Now()
		Eventually(func(g Gomega) {
			for _, team := range teams {
				g.Expect(decidedClusters(ctx, g, team+"-placement")).To(ConsistOf(sharedCluster))
				gc := &appsv1beta1.GitOpsCluster{}
				g.Expect(hub.Get(ctx, importer(team), gc)).To(Succeed())
				g.Expect(gc.Status.Phase).To(Equal(appsv1beta1.PhaseSuccessful), "%s: %s", team, gc.Status.Message)
				g.Expect(gc.Status.Message).To(ContainSubstring(sharedCluster))
				ready := meta.FindStatusCondition(gc.Status.Conditions, appsv1beta1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.ObservedGeneration).To(Equal(gc.Generation))
			}
			s := &corev1.Secret{}
			g.Expect(hub.Get(ctx, secretKey, s)).To(Succeed())
			g.Expect(owners(s)).To(ConsistOf(importer("team-a").String(), importer("team-b").String()))
			g.Expect(s.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
			g.Expect(s.Labels).To(HaveKeyWithValue("apps.open-cluster-management.io/cluster-name", sharedCluster))
			g.Expect(s.Labels).To(HaveKeyWithValue(sharedClusterLabel, "true"))
			secretUID = s.UID
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("two GitOpsClusters successful", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("keeps the Secret when one GitOpsCluster is deleted", func(ctx SpecContext) {
		gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: importer("team-a").Name}}
		Expect(hub.Delete(ctx, gc)).To(Succeed())
		// The finalizer lets go of the Secret before the GitOpsCluster goes.
		Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(gc), gc))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
		s := &corev1.Secret{}
		Expect(hub.Get(ctx, secretKey, s)).To(Succeed())
		Expect(s.UID).To(Equal(secretUID), "the Secret was re-created")
		Expect(owners(s)).To(ConsistOf(importer("team-b").String()))

		other := &appsv1beta1.GitOpsCluster{}
		Expect(hub.Get(ctx, importer("team-b"), other)).To(Succeed())
		Expect(other.Status.Phase).To(Equal(appsv1beta1.PhaseSuccessful), other.Status.Message)
	})

	It("removes the Secret with the last GitOpsCluster", func(ctx SpecContext) {
		gc := &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: importer("team-b").Name}}
		Expect(hub.Delete(ctx, gc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, secretKey, &corev1.Secret{}))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "Secret %s is not gone", secretKey)
	})
})
