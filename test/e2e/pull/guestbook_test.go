//go:build e2e

package pull_test

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	argoNS      = framework.ChartNamespace // argocd, on the hub and on the clusters
	appSetName  = fleet.GuestbookApplicationSet
	guestbookNS = "guestbook"
)

var (
	applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	appSetGVK      = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}
)

func hubAppName(cluster string) string { return cluster + "-" + appSetName }

// The guestbook example (scenario 1), then what happens to it when an agent stops
// (scenario 4), the addon is disabled on a cluster (7), a cluster leaves the placement (5)
// and the ApplicationSet is deleted (6): one ordered story on one ApplicationSet, as an
// operator lives it.
var (
	repo *fleet.LocalGitRepo
	// head is the revision the guestbook's Applications are synced to.
	head string
	// works[cluster] is the name of the cluster's ManifestWork.
	works = map[string]string{}
)

var _ = Describe("The guestbook example", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		var err error
		repo, err = fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "argocd-example-apps"))
		Expect(err).NotTo(HaveOccurred())
		head, err = repo.Head()
		Expect(err).NotTo(HaveOccurred())

		By("applying examples/pull/ in order: the binding of the default ManagedClusterSet, then every file before the ApplicationSet")
		Expect(fleet.BindDefaultClusterSet(ctx, hub, argoNS, clusters)).To(Succeed())
		Expect(fleet.ApplyPullExamplesUpToApplicationSet(ctx, hub)).To(Succeed())
	})

	It("has the addon available on both clusters", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				mca := &addonv1alpha1.ManagedClusterAddOn{}
				g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: c, Name: fleet.PullAddonName}, mca)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).
					To(BeTrue(), "%s: %v", c, mca.Status.Conditions)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("has the Placement decide on both clusters and the GitOpsCluster register them with Argo CD", func(ctx SpecContext) {
		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(decidedClusters(ctx, g, fleet.GuestbookPlacement)).To(ConsistOf(clusters))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("placement decided", time.Since(start).Round(100*time.Millisecond).String())
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				secret := &corev1.Secret{}
				g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: c + "-cluster-secret"}, secret)).To(Succeed())
				g.Expect(secret.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
			}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: "ocm-placement-generator"}, &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("cluster secrets and generator ConfigMap", time.Since(start).Round(100*time.Millisecond).String())
	})

	// The ApplicationSet comes after the GitOpsCluster has written the generator ConfigMap
	// (examples/README.md's kubectl wait): Argo CD's applicationset-controller retries a
	// generator error (ConfigMap not found) only after 3 minutes. It requeues every 30 s
	// (requeueAfterSeconds) otherwise.
	It("renders one hub Application per cluster from the placement decisions", func(ctx SpecContext) {
		By("waiting for the GitOpsCluster to be successful, then applying " + fleet.PullApplicationSetExample + " (repoURL: the local repository)")
		Expect(fleet.WaitForGitOpsClusterSuccessful(ctx, hub, argoNS, fleet.GuestbookGitOpsCluster)).To(Succeed())
		set, err := fleet.GuestbookApplicationSetFor(repo.URL)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.GroupVersionKind()).To(Equal(appSetGVK))
		Expect(hub.Create(ctx, set)).To(Succeed())
		start := time.Now()
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				app := getApp(ctx, g, hub, argoNS, hubAppName(c))
				g.Expect(app.GetAnnotations()).To(HaveKeyWithValue("apps.open-cluster-management.io/ocm-managed-cluster", c))
				g.Expect(app.GetLabels()).To(HaveKeyWithValue("apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"))
			}
			apps := &unstructured.UnstructuredList{}
			apps.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
			g.Expect(hub.List(ctx, apps, client.InNamespace(argoNS))).To(Succeed())
			g.Expect(apps.Items).To(HaveLen(len(clusters)))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("hub Applications generated", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("wraps each in one ManifestWork in its cluster's namespace", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				list := &workv1.ManifestWorkList{}
				g.Expect(hub.List(ctx, list, client.InNamespace(c),
					client.MatchingLabels{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"})).To(Succeed())
				g.Expect(list.Items).To(HaveLen(1), c)
				mw := list.Items[0]
				g.Expect(mw.Name).To(HavePrefix(hubAppName(c)+"-"), c)
				g.Expect(mw.Annotations).To(HaveKeyWithValue("apps.open-cluster-management.io/hub-application-name", hubAppName(c)))
				g.Expect(mw.Annotations).To(HaveKeyWithValue("apps.open-cluster-management.io/hosting-applicationset", argoNS+"/"+appSetName))
				g.Expect(mw.Labels).To(HaveKeyWithValue("apps.open-cluster-management.io/application-set", "true"))
				g.Expect(mw.Spec.Workload.Manifests).To(HaveLen(1))
				works[c] = mw.Name
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("syncs the Applications on both clusters: the guestbook's objects exist there", func(ctx SpecContext) {
		start := time.Now()
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				spoke := theFleet.Cluster(c).APIServer.Client
				app := getApp(ctx, g, spoke, argoNS, hubAppName(c))
				g.Expect(app.GetAnnotations()).To(HaveKeyWithValue("apps.open-cluster-management.io/hub-application-name", hubAppName(c)))
				dest, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "server")
				g.Expect(dest).To(Equal("https://kubernetes.default.svc"))
				g.Expect(nested(app, "status", "sync", "status")).To(Equal("Synced"), c)
				g.Expect(nested(app, "status", "sync", "revision")).To(Equal(head), c)
				g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"), c)

				cm := &corev1.ConfigMap{}
				g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: guestbookNS, Name: "guestbook-ui"}, cm)).To(Succeed(), c)
				g.Expect(cm.Data).To(HaveKeyWithValue("title", "Guestbook from the hub"))
				g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: guestbookNS, Name: "guestbook-ui"}, &appsv1.Deployment{})).To(Succeed(), c)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("synced on both clusters", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("publishes one ApplicationStatusReport per cluster on the hub", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				list := &appsv1alpha1.ApplicationStatusReportList{}
				g.Expect(hub.List(ctx, list, client.InNamespace(c))).To(Succeed())
				g.Expect(list.Items).To(HaveLen(1), c)
				r := list.Items[0]
				g.Expect(r.Name).To(Equal(argoNS + "." + hubAppName(c)))
				g.Expect(r.Source.Cluster).To(Equal(c))
				g.Expect(r.Source.HubApplicationName).To(Equal(hubAppName(c)))
				g.Expect(r.Source.HubApplicationNamespace).To(Equal(argoNS))
				g.Expect(string(r.Status.Sync.Status)).To(Equal("Synced"))
				g.Expect(r.Status.Resources).To(ContainElements(
					And(HaveField("Kind", "ConfigMap"), HaveField("Name", "guestbook-ui"), HaveField("Namespace", guestbookNS)),
					And(HaveField("Kind", "Deployment"), HaveField("Name", "guestbook-ui"), HaveField("Namespace", guestbookNS)),
				))
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	// No kubelet and no deployment controller run: the Deployment never rolls out, so Argo
	// CD reports it, and the Application, Progressing.
	It("shows sync, health and resources on the hub Applications", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				expectHubApp(ctx, g, c, head, "Progressing")
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("reports both clusters in the MulticlusterApplicationSetReport with resources and a correct summary", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			expectReport(ctx, g, works, head, "Progressing")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("follows the rollout on the clusters to Healthy, on the hub Applications and in the report", func(ctx SpecContext) {
		By("completing each Deployment's rollout as a kubelet and the deployment controller would")
		for _, c := range clusters {
			spoke := theFleet.Cluster(c).APIServer.Client
			dep := &appsv1.Deployment{}
			Expect(spoke.Get(ctx, client.ObjectKey{Namespace: guestbookNS, Name: "guestbook-ui"}, dep)).To(Succeed())
			patch := client.MergeFrom(dep.DeepCopy())
			dep.Status = appsv1.DeploymentStatus{
				ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
				}},
			}
			Expect(spoke.Status().Patch(ctx, dep, patch)).To(Succeed())
		}
		start := time.Now()
		Eventually(func(g Gomega) {
			for _, c := range clusters {
				expectHubApp(ctx, g, c, head, "Healthy")
			}
			expectReport(ctx, g, works, head, "Healthy")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("Healthy on the hub after the rollout", time.Since(start).Round(100*time.Millisecond).String())
	})

	Context("The metrics", metricsSpecs)
	Context("The reports, as namespace admins read them", tenantRolesSpecs)
	Context("Scenario 4: an agent stops, then starts again", agentStoppedSpecs)
	Context("Scenario 7: the addon is disabled on a cluster", addonDisabledSpecs)
	Context("Scenario 5: a cluster leaves the placement", clusterLeavesPlacementSpecs)
	Context("Scenario 6: the ApplicationSet is deleted", appSetDeletedSpecs)

	// The other scenarios run before or after this story, in random order: give them both
	// clusters back as the suite started them.
	It("gives "+disabledCluster+" back: in every placement, the addon enabled, its agent running", func(ctx SpecContext) {
		setClusterLabel(ctx, disabledCluster, excludedLabel, "")
		Expect(pull.EnableAddon(ctx, disabledCluster, "")).To(Succeed())
		Expect(pull.StartAgent(ctx, disabledCluster, "")).To(Succeed())
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: disabledCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).
				To(BeTrue(), "%v", mca.Status.Conditions)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// expectHubApp checks cluster's hub Application: synced at head, health, and the
// guestbook's resources.
func expectHubApp(ctx SpecContext, g Gomega, cluster, head, health string) {
	app := getApp(ctx, g, hub, argoNS, hubAppName(cluster))
	g.Expect(nested(app, "status", "sync", "status")).To(Equal("Synced"), cluster)
	g.Expect(nested(app, "status", "sync", "revision")).To(Equal(head), cluster)
	g.Expect(nested(app, "status", "health", "status")).To(Equal(health), cluster)
	g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"), cluster)
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	byKind := map[string]map[string]any{}
	for _, r := range resources {
		m := r.(map[string]any)
		byKind[m["kind"].(string)] = m
	}
	g.Expect(byKind).To(HaveKey("ConfigMap"), cluster)
	g.Expect(byKind).To(HaveKey("Deployment"), cluster)
	for _, kind := range []string{"ConfigMap", "Deployment"} {
		g.Expect(byKind[kind]).To(HaveKeyWithValue("name", "guestbook-ui"))
		g.Expect(byKind[kind]).To(HaveKeyWithValue("namespace", guestbookNS))
		g.Expect(byKind[kind]).To(HaveKeyWithValue("status", "Synced"))
	}
}

// expectReport checks the ApplicationSet's report: both clusters, synced at head with
// health, the guestbook's resources, and the summary those make.
func expectReport(ctx SpecContext, g Gomega, works map[string]string, head, health string) {
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: appSetName}, r)).To(Succeed())
	g.Expect(r.Labels).To(HaveKeyWithValue("apps.open-cluster-management.io/hosting-applicationset", argoNS+"."+appSetName))
	g.Expect(r.Statuses.Resources).To(ConsistOf(
		appsv1alpha1.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Name: "guestbook-ui", Namespace: guestbookNS},
		appsv1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "guestbook-ui", Namespace: guestbookNS},
	))
	g.Expect(r.Statuses.ClusterConditions).To(HaveLen(len(clusters)))
	for _, c := range clusters {
		g.Expect(r.Statuses.ClusterConditions).To(ContainElement(And(
			HaveField("Cluster", c),
			HaveField("App", strings.Join([]string{argoNS, hubAppName(c), c, works[c]}, "/")),
			HaveField("SyncStatus", "Synced"),
			HaveField("HealthStatus", health),
			HaveField("OperationStatePhase", "Succeeded"),
			HaveField("SyncRevision", head),
			HaveField("Conditions", BeEmpty()),
			HaveField("AgentAvailable", HaveValue(BeTrue())),
			HaveField("LastReportedAt", Not(BeNil())),
		)), c)
	}
	n := "2"
	want := appsv1alpha1.ReportSummary{Clusters: n, Synced: n, NotSynced: "0", Healthy: "0", NotHealthy: n, InProgress: n, AgentsUnavailable: "0"}
	if health == "Healthy" {
		want.Healthy, want.NotHealthy, want.InProgress = n, "0", "0"
	}
	g.Expect(r.Statuses.Summary).To(Equal(want))
}

func getApp(ctx SpecContext, g Gomega, c client.Client, ns, name string) *unstructured.Unstructured {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(applicationGVK)
	g.ExpectWithOffset(1, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app)).To(Succeed(), "%s/%s", ns, name)
	return app
}

func nested(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// readExample reads the one object of examples/path.
func readExample(path string) *unstructured.Unstructured {
	GinkgoHelper()
	obj, err := framework.ReadExample(path)
	Expect(err).NotTo(HaveOccurred())
	return obj
}
