//go:build e2e

package pull_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// The report command (`argocd-pull-addon report`, docs/using.md) run as a user runs it:
// the built binary with the hub's kubeconfig, on the report of the guestbook
// ApplicationSet (examples/applicationset-guestbook.yaml from the guestbook's repository)
// deployed to both clusters. The ApplicationSet, its Placement (both clusters, by a label
// of their own) and GitOpsCluster have names of their own, and everything they made is
// gone at the end, so the guestbook story sees the same hub before or after.
const (
	reportAppSet    = "report-guestbook"
	reportPlacement = "report-placement"
	reportLabel     = "e2e.argocd-pull/report"
	reportNS        = "report-e2e"
)

var _ = Describe("The report command", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		repo, err := fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "report"))
		Expect(err).NotTo(HaveOccurred())

		By("labelling both clusters and binding the global ManagedClusterSet to argocd")
		for _, c := range clusters {
			setClusterLabel(ctx, c, reportLabel, "true")
		}
		bindGlobalClusterSet(ctx)
		DeferCleanup(func(ctx SpecContext) {
			for _, c := range clusters {
				setClusterLabel(ctx, c, reportLabel, "")
			}
		})

		By("creating a Placement of both clusters and a GitOpsCluster for it")
		placement := &clusterv1beta1.Placement{
			ObjectMeta: metav1.ObjectMeta{Name: reportPlacement, Namespace: argoNS},
			Spec: clusterv1beta1.PlacementSpec{
				ClusterSets: []string{"global"},
				Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
					LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{reportLabel: "true"}},
				}}},
			},
		}
		Expect(hub.Create(ctx, placement)).To(Succeed())
		gitops := &appsv1beta1.GitOpsCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "report-importer", Namespace: argoNS},
			Spec: appsv1beta1.GitOpsClusterSpec{
				ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNS},
				PlacementRef: &corev1.ObjectReference{
					APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement", Name: reportPlacement,
				},
				CreateBlankClusterSecrets: ptr.To(true),
			},
		}
		Expect(hub.Create(ctx, gitops)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, gitops))).To(Succeed())
			Expect(client.IgnoreNotFound(hub.Delete(ctx, placement))).To(Succeed())
		})
		Eventually(func(g Gomega) {
			g.Expect(decidedClusters(ctx, g, reportPlacement)).To(ConsistOf(clusters))
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: fleet.GeneratorConfigMap}, &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("creating the guestbook ApplicationSet under a name of its own")
		set, err := fleet.GuestbookApplicationSetFor(repo.URL)
		Expect(err).NotTo(HaveOccurred())
		set.SetName(reportAppSet)
		Expect(unstructured.SetNestedField(set.Object, []any{map[string]any{"clusterDecisionResource": map[string]any{
			"configMapRef":        fleet.GeneratorConfigMap,
			"labelSelector":       map[string]any{"matchLabels": map[string]any{clusterv1beta1.PlacementLabel: reportPlacement}},
			"requeueAfterSeconds": int64(30),
		}}}, "spec", "generators")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, "{{name}}-"+reportAppSet, "spec", "template", "metadata", "name")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, reportNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
		Expect(hub.Create(ctx, set)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, set, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
			Eventually(func(g Gomega) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(appSetGVK)
				err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: reportAppSet}, u)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationSet %s: %v", reportAppSet, err)
				for _, c := range clusters {
					u.SetGroupVersionKind(applicationGVK)
					err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: c + "-" + reportAppSet}, u)
					g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s: %v", c, err)
				}
				err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: reportAppSet}, &appsv1alpha1.MulticlusterApplicationSetReport{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "MulticlusterApplicationSetReport %s: %v", reportAppSet, err)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		}, NodeTimeout(3*time.Minute))

		By("waiting for the report: both clusters synced, reported by their agents")
		// No kubelet runs: the guestbook's Deployment stays Progressing.
		Eventually(func(g Gomega) {
			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: reportAppSet}, r)).To(Succeed())
			g.Expect(r.Statuses.ClusterConditions).To(HaveLen(len(clusters)))
			for _, e := range r.Statuses.ClusterConditions {
				g.Expect(e.SyncStatus).To(Equal("Synced"), e.Cluster)
				g.Expect(e.HealthStatus).To(Equal("Progressing"), e.Cluster)
				g.Expect(e.AgentAvailable).To(HaveValue(BeTrue()), e.Cluster)
				g.Expect(e.LastReportedAt).NotTo(BeNil(), e.Cluster)
				g.Expect(e.Conditions).To(BeEmpty(), e.Cluster)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("prints a row per cluster as the report says, and its summary", func(ctx SpecContext) {
		out := runReportCommand(ctx, pull.Binary, reportAppSet, "-n", argoNS)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		Expect(lines).To(HaveLen(len(clusters)+2), out)
		Expect(strings.Fields(lines[0])).To(Equal([]string{"CLUSTER", "APP", "SYNC", "HEALTH", "AGENT", "ERRORS"}))
		r := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: reportAppSet}, r)).To(Succeed())
		for i, c := range clusters {
			e := r.Statuses.ClusterConditions[i] // the hub sorts them by cluster
			Expect(e.Cluster).To(Equal(c))
			Expect(e.App).To(HavePrefix(argoNS + "/" + c + "-" + reportAppSet + "/"))
			Expect(strings.Fields(lines[1+i])).To(Equal([]string{c, c + "-" + reportAppSet, e.SyncStatus, e.HealthStatus, "available", "-"}), out)
		}
		Expect(r.Statuses.Summary).To(Equal(appsv1alpha1.ReportSummary{Clusters: "2", Synced: "2", NotSynced: "0", Healthy: "0", NotHealthy: "2", InProgress: "2", AgentsUnavailable: "0"}))
		Expect(lines[len(lines)-1]).To(Equal("2 clusters: 2 synced, 0 healthy, 2 in progress (0 not synced, 2 not healthy, 0 agents unavailable)"))
	})

	It("prints the report object with -o json, and narrowed to a cluster with --cluster", func(ctx SpecContext) {
		// The agents report again every few seconds (lastReportedAt): compare with the
		// object of the same resourceVersion.
		Eventually(func(g Gomega) {
			printed := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(json.Unmarshal([]byte(runReportCommand(ctx, pull.Binary, reportAppSet, "-n", argoNS, "-o", "json")), printed)).To(Succeed())
			onHub := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: reportAppSet}, onHub)).To(Succeed())
			g.Expect(printed.ResourceVersion).To(Equal(onHub.ResourceVersion))
			g.Expect(printed.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "MulticlusterApplicationSetReport"}))
			printed.TypeMeta, onHub.ManagedFields = metav1.TypeMeta{}, nil
			g.Expect(printed).To(Equal(onHub))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		narrowed := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(json.Unmarshal([]byte(runReportCommand(ctx, pull.Binary, reportAppSet, "-n", argoNS, "--cluster", "cluster2", "-o", "json")), narrowed)).To(Succeed())
		Expect(narrowed.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", "cluster2")))
		Expect(narrowed.Statuses.Summary.Clusters).To(Equal("2"), "the summary counts every cluster")
	})

	It("prints the same as the kubectl plugin (the binary as kubectl-argocd_pull)", func(ctx SpecContext) {
		plugin := filepath.Join(GinkgoT().TempDir(), cli.PluginFileName)
		Expect(os.Symlink(pull.Binary, plugin)).To(Succeed())
		Expect(runReportCommand(ctx, plugin, reportAppSet, "-n", argoNS)).To(Equal(runReportCommand(ctx, pull.Binary, reportAppSet, "-n", argoNS)))
		help := runReportCommand(ctx, plugin, "--help")
		Expect(help).To(ContainSubstring("kubectl argocd-pull report " + "[APPLICATIONSET]"))
	})
})

// runReportCommand runs binary's `report` with args against the hub, as its admin, and
// returns what it printed.
func runReportCommand(ctx SpecContext, binary string, args ...string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, binary, append(append([]string{"report"}, args...), "--kubeconfig", theFleet.Hub.KubeconfigFile)...)
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "%s report %v", binary, args)
	return string(out)
}
