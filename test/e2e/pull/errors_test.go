//go:build e2e

package pull_test

import (
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Errors on a cluster reach the hub. They use their own
// git repository, ManagedClusterSetBinding (the "global" set), Placement (cluster1 only,
// by a label of their own), GitOpsCluster and one ApplicationSet per spec, and wait at
// the end until everything their ApplicationSet made is gone, so scenario 1 sees the
// same hub whether it runs before or after them.
const (
	errCluster      = "cluster1"
	errPlacement    = "errors-placement"
	errClusterLabel = "e2e.argocd-pull/errors"
	errNS           = "errors-e2e"
	missingPath     = "does/not/exist"
	badCMName       = "Bad_Name"
)

// A ConfigMap whose name the API server rejects (not an RFC 1123 subdomain).
const badManifestYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + badCMName + `
data:
  key: value
`

const goodManifestYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: fine
data:
  key: value
`

var _ = Describe("Scenarios 2 and 3: errors on a cluster reach the hub", Ordered, func() {
	var (
		repo *fleet.LocalGitRepo
		head string
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		repo, err = fleet.NewLocalGitRepo(filepath.Join(fleetDir, "git", "errors"), map[string]string{
			"good/configmap.yaml": goodManifestYAML,
			"bad/configmap.yaml":  badManifestYAML,
		})
		Expect(err).NotTo(HaveOccurred())
		head, err = repo.Head()
		Expect(err).NotTo(HaveOccurred())

		By("labelling " + errCluster + " and binding the global ManagedClusterSet to argocd")
		mc := &clusterv1.ManagedCluster{}
		Expect(hub.Get(ctx, client.ObjectKey{Name: errCluster}, mc)).To(Succeed())
		patch := client.MergeFrom(mc.DeepCopy())
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[errClusterLabel] = "true"
		Expect(hub.Patch(ctx, mc, patch)).To(Succeed())
		bindGlobalClusterSet(ctx)

		By("creating a Placement of " + errCluster + " and a GitOpsCluster for it")
		Expect(hub.Create(ctx, &clusterv1beta1.Placement{
			ObjectMeta: metav1.ObjectMeta{Name: errPlacement, Namespace: argoNS},
			Spec: clusterv1beta1.PlacementSpec{
				ClusterSets: []string{"global"},
				Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
					LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{errClusterLabel: "true"}},
				}}},
			},
		})).To(Succeed())
		Expect(hub.Create(ctx, &appsv1beta1.GitOpsCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "errors-importer", Namespace: argoNS},
			Spec: appsv1beta1.GitOpsClusterSpec{
				ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNS},
				PlacementRef: &corev1.ObjectReference{
					APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement", Name: errPlacement,
				},
				CreateBlankClusterSecrets: ptr.To(true),
			},
		})).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(decidedClusters(ctx, g, errPlacement)).To(ConsistOf(errCluster))
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: errCluster + "-cluster-secret"}, &corev1.Secret{})).To(Succeed())
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: "ocm-placement-generator"}, &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("reports a ComparisonError for a source path that does not exist", func(ctx SpecContext) {
		const name = "errors-missing-path"
		createErrorsAppSet(ctx, name, repo.URL, missingPath)
		app := errCluster + "-" + name

		start := time.Now()
		Eventually(func(g Gomega) {
			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, r)).To(Succeed())
			g.Expect(r.Statuses.ClusterConditions).To(HaveLen(1))
			cc := r.Statuses.ClusterConditions[0]
			g.Expect(cc.Cluster).To(Equal(errCluster))
			g.Expect(cc.Conditions).To(ContainElement(And(
				HaveField("Type", "ComparisonError"),
				HaveField("Message", And(ContainSubstring(missingPath), ContainSubstring("app path does not exist"))),
			)), "%s", toYAML(r))

			asr := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: errCluster, Name: argoNS + "." + app}, asr)).To(Succeed())
			g.Expect(asr.Status.Conditions).To(ContainElement(And(
				HaveField("Type", "ComparisonError"),
				HaveField("Message", And(ContainSubstring(missingPath), ContainSubstring("app path does not exist"))),
			)), "%s", toYAML(asr))

			hubApp := getApp(ctx, g, hub, argoNS, app)
			conds, _, _ := unstructured.NestedSlice(hubApp.Object, "status", "conditions")
			g.Expect(conds).To(ContainElement(And(
				HaveKeyWithValue("type", "ComparisonError"),
				HaveKeyWithValue("message", And(ContainSubstring(missingPath), ContainSubstring("app path does not exist"))),
			)), "%s", toYAML(hubApp.Object["status"]))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("ComparisonError on the hub", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("reports a failed sync naming the resource the API server rejects", func(ctx SpecContext) {
		const name = "errors-bad-manifest"
		createErrorsAppSet(ctx, name, repo.URL, "bad")
		app := errCluster + "-" + name

		start := time.Now()
		Eventually(func(g Gomega) {
			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, r)).To(Succeed())
			g.Expect(r.Statuses.ClusterConditions).To(HaveLen(1))
			cc := r.Statuses.ClusterConditions[0]
			dump := toYAML(r)
			g.Expect(cc.Cluster).To(Equal(errCluster))
			g.Expect(cc.OperationStatePhase).To(BeElementOf("Failed", "Error"), dump)
			g.Expect(cc.SyncStatus).To(Equal("OutOfSync"), dump)
			g.Expect(cc.SyncRevision).To(Equal(head), dump)
			g.Expect(cc.Conditions).To(ContainElement(And(
				HaveField("Type", "SyncError"),
				HaveField("Message", ContainSubstring(badCMName)),
			)), dump)
			g.Expect(cc.FailingResources).To(ContainElement(And(
				HaveField("Kind", "ConfigMap"), HaveField("Name", badCMName), HaveField("Namespace", errNS),
			)), dump)

			hubApp := getApp(ctx, g, hub, argoNS, app)
			dump = toYAML(hubApp.Object["status"])
			g.Expect(nested(hubApp, "status", "operationState", "phase")).To(BeElementOf("Failed", "Error"), dump)
			g.Expect(nested(hubApp, "status", "operationState", "message")).To(ContainSubstring(badCMName), dump)
			g.Expect(nested(hubApp, "status", "sync", "status")).To(Equal("OutOfSync"), dump)
			resources, _, _ := unstructured.NestedSlice(hubApp.Object, "status", "resources")
			g.Expect(resources).To(ContainElement(And(
				HaveKeyWithValue("kind", "ConfigMap"), HaveKeyWithValue("name", badCMName),
				HaveKeyWithValue("namespace", errNS), HaveKeyWithValue("status", "OutOfSync"),
			)), dump)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("failed sync on the hub", time.Since(start).Round(100*time.Millisecond).String())
	})
})

// createErrorsAppSet creates a pull-model ApplicationSet name of the errors Placement
// with path of repoURL, and registers its clean-up: the ApplicationSet deleted and
// everything it made (hub Applications, ManifestWorks, ApplicationStatusReports, the
// report) gone.
func createErrorsAppSet(ctx SpecContext, name, repoURL, path string) {
	GinkgoHelper()
	set := readExample(fleet.PullApplicationSetExample)
	set.SetName(name)
	Expect(unstructured.SetNestedField(set.Object, []any{map[string]any{"clusterDecisionResource": map[string]any{
		"configMapRef":        "ocm-placement-generator",
		"labelSelector":       map[string]any{"matchLabels": map[string]any{clusterv1beta1.PlacementLabel: errPlacement}},
		"requeueAfterSeconds": int64(30),
	}}}, "spec", "generators")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, "{{name}}-"+name, "spec", "template", "metadata", "name")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, path, "spec", "template", "spec", "source", "path")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, errNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
	// Argo CD 3 retries a failed automated sync, its operation Running in between: one
	// quick retry, and the operation ends Failed.
	Expect(unstructured.SetNestedField(set.Object, map[string]any{
		"limit": int64(1), "backoff": map[string]any{"duration": "1s", "factor": int64(1), "maxDuration": "1s"},
	}, "spec", "template", "spec", "syncPolicy", "retry")).To(Succeed())
	Expect(hub.Create(ctx, set)).To(Succeed())

	DeferCleanup(func(ctx SpecContext) {
		app := errCluster + "-" + name
		del := &unstructured.Unstructured{}
		del.SetGroupVersionKind(appSetGVK)
		del.SetNamespace(argoNS)
		del.SetName(name)
		Expect(client.IgnoreNotFound(hub.Delete(ctx, del, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
		Eventually(func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(appSetGVK)
			err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, u)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationSet %s: %v", name, err)
			u.SetGroupVersionKind(applicationGVK)
			err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: app}, u)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s: %v", app, err)
			works := &workv1.ManifestWorkList{}
			g.Expect(hub.List(ctx, works, client.InNamespace(errCluster))).To(Succeed())
			for _, mw := range works.Items {
				g.Expect(mw.Annotations).NotTo(HaveKeyWithValue("apps.open-cluster-management.io/hub-application-name", app), mw.Name)
			}
			err = hub.Get(ctx, client.ObjectKey{Namespace: errCluster, Name: argoNS + "." + app}, &appsv1alpha1.ApplicationStatusReport{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationStatusReport of %s: %v", app, err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}, NodeTimeout(3*time.Minute))
}

func toYAML(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
