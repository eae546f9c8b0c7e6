//go:build e2e

package pull_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Bad input on the fleet: invalid annotations, Applications and payloads too large. Each
// scenario uses its own standalone pulled Application on badInputCluster, its own git
// repository and its own namespace on the cluster, and waits at the end until the hub
// Application, its ManifestWork, its report and the Application on the cluster are gone,
// so the other scenarios see the same hub whether they run before or after these.
const (
	badInputCluster = "cluster1"
	soloApp         = "solo"
	soloNS          = "solo-e2e"
	oversizedApp    = "oversized"
	// theTypo is the destination-server override without its https://.
	theTypo = "kubernetes.default.svc"
)

var _ = Describe("Bad input: the typo", Ordered, func() {
	var (
		spoke client.Client
		// delivered is the ManifestWork as it was once the Application synced.
		delivered *workv1.ManifestWork
	)

	BeforeAll(func(ctx SpecContext) {
		repo, err := fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "badinput"))
		Expect(err).NotTo(HaveOccurred())
		spoke = theFleet.Cluster(badInputCluster).APIServer.Client
		createStandaloneApp(ctx, soloApp, map[string]any{
			"project": "default",
			"source":  map[string]any{"repoURL": repo.URL, "targetRevision": "HEAD", "path": "guestbook"},
			"destination": map[string]any{
				"server": "https://kubernetes.default.svc", "namespace": soloNS,
			},
			"syncPolicy": map[string]any{
				"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"},
			},
		})
	})

	It("syncs the standalone pulled Application on the cluster", func(ctx SpecContext) {
		start := time.Now()
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, soloApp)
			g.Expect(nested(app, "status", "sync", "status")).To(Equal("Synced"))
			expectGuestbookOn(ctx, g, spoke, soloNS)
			delivered = onlyWorkOf(ctx, g, soloApp)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("standalone Application synced", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("keeps the ManifestWork and the guestbook on the cluster after the typo, and says why on the hub", func(ctx SpecContext) {
		patchAnnotation(ctx, soloApp, "apps.open-cluster-management.io/destination-server", &[]string{theTypo}[0])

		want := `="` + theTypo + `" is not an https URL`
		Eventually(func(g Gomega) {
			g.Expect(hubConditions(getApp(ctx, g, hub, argoNS, soloApp))).To(ContainElement(And(
				HaveKeyWithValue("type", "InvalidSpecError"),
				HaveKeyWithValue("message", And(HavePrefix(pullmodel.HubConditionPrefix), ContainSubstring(want),
					ContainSubstring("delivered before is kept unchanged"))),
			)))
			expectWarningEvent(ctx, g, soloApp, propagation.ReasonInvalidApplication, want)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		// The work agent writes the ManifestWork's status (feedback) whenever the cluster's
		// Application changes, so its resourceVersion may move; its generation, labels,
		// annotations and spec are what the manager writes.
		Consistently(func(g Gomega) {
			expectSameWork(ctx, g, delivered)
			g.Expect(getApp(ctx, g, spoke, argoNS, soloApp).GetDeletionTimestamp()).To(BeNil())
			expectGuestbookOn(ctx, g, spoke, soloNS)
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("clears the condition once the typo is removed, the work still as delivered", func(ctx SpecContext) {
		patchAnnotation(ctx, soloApp, "apps.open-cluster-management.io/destination-server", nil)
		Eventually(func(g Gomega) {
			for _, c := range hubConditions(getApp(ctx, g, hub, argoNS, soloApp)) {
				g.Expect(c).NotTo(HaveKeyWithValue("type", "InvalidSpecError"), toYAML(c))
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			expectSameWork(ctx, g, delivered)
			g.Expect(nested(getApp(ctx, g, spoke, argoNS, soloApp), "status", "sync", "status")).To(Equal("Synced"))
			expectGuestbookOn(ctx, g, spoke, soloNS)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

var _ = Describe("Bad input: an oversized Application", func() {
	It("gets no ManifestWork, and a DeliveryError condition and a Warning Event on the hub", func(ctx SpecContext) {
		createStandaloneApp(ctx, oversizedApp, map[string]any{
			"project": "default",
			"source":  map[string]any{"repoURL": "https://example.invalid/repo.git", "targetRevision": "HEAD", "path": "guestbook"},
			"destination": map[string]any{
				"server": "https://kubernetes.default.svc", "namespace": soloNS,
			},
			// Over OCM's ManifestWork limit by itself.
			"info": []any{map[string]any{"name": "notes", "value": strings.Repeat("x", pullmodel.ManifestsLimit)}},
		})
		Eventually(func(g Gomega) {
			g.Expect(hubConditions(getApp(ctx, g, hub, argoNS, oversizedApp))).To(ContainElement(And(
				HaveKeyWithValue("type", "DeliveryError"),
				HaveKeyWithValue("message", And(HavePrefix(pullmodel.HubConditionPrefix),
					ContainSubstring("over OCM's ManifestWork limit of 512000 bytes"))),
			)))
			expectWarningEvent(ctx, g, oversizedApp, propagation.ReasonManifestWorkTooLarge, "over OCM's ManifestWork limit")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(worksOfApp(ctx, g, oversizedApp)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
})

// createStandaloneApp creates a pulled hub Application name for badInputCluster with spec,
// with Argo CD's resources finalizer so that deleting it also deletes what it deployed
// on the cluster, and registers its clean-up.
func createStandaloneApp(ctx SpecContext, name string, spec map[string]any) {
	GinkgoHelper()
	app := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	app.SetGroupVersionKind(applicationGVK)
	app.SetNamespace(argoNS)
	app.SetName(name)
	app.SetLabels(map[string]string{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"})
	app.SetAnnotations(map[string]string{
		"argocd.argoproj.io/skip-reconcile":                                 "true",
		"apps.open-cluster-management.io/ocm-managed-cluster":               badInputCluster,
		"apps.open-cluster-management.io/ocm-managed-cluster-app-namespace": argoNS,
	})
	app.SetFinalizers([]string{pullmodel.ResourcesFinalizer})
	Expect(hub.Create(ctx, app)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { deleteStandaloneApp(ctx, name) }, NodeTimeout(3*time.Minute))
}

// deleteStandaloneApp deletes the hub Application name and waits until it, its
// ManifestWork, its ApplicationStatusReport and the Application on the cluster are gone.
func deleteStandaloneApp(ctx SpecContext, name string) {
	GinkgoHelper()
	deletePulledApp(ctx, badInputCluster, argoNS, name)
}

// deletePulledApp deletes hub Application hubNS/name, pulled to cluster's argocd
// namespace, and waits until it, its ManifestWork, its ApplicationStatusReport and the
// Application on the cluster are gone.
func deletePulledApp(ctx SpecContext, cluster, hubNS, name string) {
	GinkgoHelper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(applicationGVK)
	app.SetNamespace(hubNS)
	app.SetName(name)
	Expect(client.IgnoreNotFound(hub.Delete(ctx, app))).To(Succeed())
	spoke := theFleet.Cluster(cluster).APIServer.Client
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(applicationGVK)
		err := hub.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: name}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub Application %s/%s: %v", hubNS, name, err)
		g.Expect(worksIn(ctx, g, cluster, hubNS, name)).To(BeEmpty())
		err = spoke.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s on %s: %v", name, cluster, err)
		err = hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: argoNS + "." + name}, &appsv1alpha1.ApplicationStatusReport{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationStatusReport of %s: %v", name, err)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// patchAnnotation sets (value nil: removes) one annotation of the hub Application name.
func patchAnnotation(ctx SpecContext, name, key string, value *string) {
	GinkgoHelper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(applicationGVK)
	app.SetNamespace(argoNS)
	app.SetName(name)
	var v any
	if value != nil {
		v = *value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(hub.Patch(ctx, app, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// worksOfApp lists the ManifestWorks in badInputCluster's namespace of the hub Application name.
func worksOfApp(ctx SpecContext, g Gomega, name string) []workv1.ManifestWork {
	return worksIn(ctx, g, badInputCluster, argoNS, name)
}

// worksIn lists the ManifestWorks in cluster's namespace of hub Application hubNS/name.
func worksIn(ctx SpecContext, g Gomega, cluster, hubNS, name string) []workv1.ManifestWork {
	list := &workv1.ManifestWorkList{}
	g.ExpectWithOffset(1, hub.List(ctx, list, client.InNamespace(cluster))).To(Succeed())
	var out []workv1.ManifestWork
	for _, w := range list.Items {
		if w.Annotations["apps.open-cluster-management.io/hub-application-namespace"] == hubNS &&
			w.Annotations["apps.open-cluster-management.io/hub-application-name"] == name {
			out = append(out, w)
		}
	}
	return out
}

func onlyWorkOf(ctx SpecContext, g Gomega, name string) *workv1.ManifestWork {
	works := worksOfApp(ctx, g, name)
	g.ExpectWithOffset(1, works).To(HaveLen(1))
	return &works[0]
}

// expectSameWork checks the Application's only ManifestWork is still was, as the
// manager wrote it.
func expectSameWork(ctx SpecContext, g Gomega, was *workv1.ManifestWork) {
	name := was.Annotations["apps.open-cluster-management.io/hub-application-name"]
	w := onlyWorkOf(ctx, g, name)
	g.ExpectWithOffset(1, w.UID).To(Equal(was.UID))
	g.ExpectWithOffset(1, w.DeletionTimestamp).To(BeNil())
	g.ExpectWithOffset(1, w.Generation).To(Equal(was.Generation))
	g.ExpectWithOffset(1, w.Labels).To(Equal(was.Labels))
	g.ExpectWithOffset(1, w.Annotations).To(Equal(was.Annotations))
	g.ExpectWithOffset(1, equality.Semantic.DeepEqual(w.Spec, was.Spec)).To(BeTrue(), "the ManifestWork's spec changed")
}

// expectGuestbookOn checks the guestbook's objects are on the cluster in namespace.
func expectGuestbookOn(ctx SpecContext, g Gomega, spoke client.Client, namespace string) {
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
		g.ExpectWithOffset(1, spoke.Get(ctx, client.ObjectKey{Namespace: namespace, Name: guestbookName}, obj)).
			To(Succeed(), "%T %s/%s", obj, namespace, guestbookName)
		g.ExpectWithOffset(1, obj.GetDeletionTimestamp()).To(BeNil(), "%T %s/%s", obj, namespace, guestbookName)
	}
}

// expectWarningEvent checks a Warning Event with reason about the hub Application name
// says text.
func expectWarningEvent(ctx SpecContext, g Gomega, name, reason, text string) {
	g.ExpectWithOffset(1, warningEvents(ctx, g, name, reason)).To(ContainElement(ContainSubstring(text)),
		"no Warning %s Event on Application %s", reason, name)
}
