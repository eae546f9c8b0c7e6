//go:build e2e

package pull_test

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Requests from the hub on a standalone pulled Application with automated sync off
// (Argo CD 3's automated.enabled: false): a sync set on the hub runs once on the cluster,
// later changes of the hub Application never start it again, the hub's .operation and
// refresh annotation are cleared once delivered, and two refreshes in a row both reach
// the cluster.
const (
	opCluster = "cluster1"
	opApp     = "ops-manual-sync"
	opDestNS  = "ops-e2e"
)

var _ = Describe("Requests from the hub: a manual sync runs once, refreshes in a row", Ordered, func() {
	var (
		repo      *fleet.LocalGitRepo
		spoke     client.Client
		startedAt string
	)
	hubKey := types.NamespacedName{Namespace: argoNS, Name: opApp}

	BeforeAll(func(ctx SpecContext) {
		var err error
		repo, err = fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "ops"))
		Expect(err).NotTo(HaveOccurred())
		spoke = theFleet.Cluster(opCluster).APIServer.Client

		app := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{
				"project": "default",
				"source":  map[string]any{"repoURL": repo.URL, "targetRevision": "HEAD", "path": "guestbook"},
				"destination": map[string]any{
					"server": "https://kubernetes.default.svc", "namespace": opDestNS,
				},
				"syncPolicy": map[string]any{
					"automated":   map[string]any{"enabled": false, "prune": true},
					"syncOptions": []any{"CreateNamespace=true"},
				},
			},
		}}
		app.SetGroupVersionKind(applicationGVK)
		app.SetNamespace(argoNS)
		app.SetName(opApp)
		app.SetLabels(map[string]string{apps.LabelPullToOCMManagedCluster: "true"})
		app.SetAnnotations(map[string]string{
			apps.AnnotationSkipReconcile:     "true",
			apps.AnnotationOCMManagedCluster: opCluster,
		})
		Expect(hub.Create(ctx, app)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, app))).To(Succeed())
			Eventually(func(g Gomega) {
				err := spoke.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: opApp}, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": applicationGVK.GroupVersion().String(), "kind": applicationGVK.Kind}})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the spoke Application: %v", err)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		}, NodeTimeout(3*time.Minute))
	})

	It("delivers automated.enabled: false as written, and the cluster does not sync by itself", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, opApp)
			enabled, found, err := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "automated", "enabled")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "the spoke Application has no automated.enabled: %s", toYAML(app.Object["spec"]))
			g.Expect(enabled).To(BeFalse())
			// Argo CD compared it: out of sync, nothing deployed yet.
			g.Expect(nested(app, "status", "sync", "status")).To(Equal("OutOfSync"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// Automated sync on (automated: {}, what the v2 types would have delivered) syncs at
		// once; off, nothing starts.
		Consistently(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, opApp)
			g.Expect(app.Object).NotTo(HaveKey("operation"))
			g.Expect(nested(app, "status", "operationState", "startedAt")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("runs a sync set on the hub once, and clears the hub's .operation", func(ctx SpecContext) {
		requested := time.Now().Truncate(time.Second)
		By("setting .operation on the hub Application, as `argocd app sync` does")
		patchHubApp(ctx, hubKey, syncOperation)

		var delivered string
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, opApp)
			g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"), "%s", toYAML(app.Object["status"]))
			startedAt = nested(app, "status", "operationState", "startedAt")
			started, err := time.Parse(time.RFC3339, startedAt)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(started).To(BeTemporally(">=", requested))
			delivered = app.GetAnnotations()[apps.AnnotationOperationDelivered]
			g.Expect(delivered).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(getApp(ctx, g, hub, argoNS, opApp).Object).NotTo(HaveKey("operation"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(),
			"the hub's .operation is cleared once the feedback shows request %s delivered", delivered)
		AddReportEntry("hub .operation cleared after the request", time.Since(requested).Round(time.Second).String())
	})

	It("does not run it again when the hub Application changes", func(ctx SpecContext) {
		By("changing only spec.info on the hub")
		patchHubApp(ctx, hubKey, `{"spec":{"info":[{"name":"changed","value":"after the sync"}]}}`)
		Eventually(func(g Gomega) {
			info, _, _ := unstructured.NestedSlice(getApp(ctx, g, spoke, argoNS, opApp).Object, "spec", "info")
			g.Expect(info).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the change reaches the cluster")
		Consistently(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, opApp)
			g.Expect(app.Object).NotTo(HaveKey("operation"))
			g.Expect(nested(app, "status", "operationState", "startedAt")).To(Equal(startedAt))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("runs a second sync set on the hub after the first was cleared", func(ctx SpecContext) {
		first, err := time.Parse(time.RFC3339, startedAt)
		Expect(err).NotTo(HaveOccurred())
		patchHubApp(ctx, hubKey, syncOperation)
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, opApp)
			g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"))
			started, err := time.Parse(time.RFC3339, nested(app, "status", "operationState", "startedAt"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(started).To(BeTemporally(">", first))
			g.Expect(getApp(ctx, g, hub, argoNS, opApp).Object).NotTo(HaveKey("operation"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("delivers two refreshes in a row, each clearing on the hub", func(ctx SpecContext) {
		var ids []string
		for round := 1; round <= 2; round++ {
			By("setting argocd.argoproj.io/refresh: normal on the hub, as `argocd app get --refresh` does")
			patchHubApp(ctx, hubKey, `{"metadata":{"annotations":{"`+apps.AnnotationRefresh+`":"normal"}}}`)
			set := time.Now()
			var id string
			Eventually(func(g Gomega) {
				id = getApp(ctx, g, spoke, argoNS, opApp).GetAnnotations()[apps.AnnotationRefreshDelivered]
				g.Expect(id).NotTo(BeEmpty())
				g.Expect(ids).NotTo(ContainElement(id), "round %d: a new request", round)
				g.Expect(getApp(ctx, g, hub, argoNS, opApp).GetAnnotations()).NotTo(HaveKey(apps.AnnotationRefresh))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			ids = append(ids, id)
			AddReportEntry(fmt.Sprintf("refresh %d delivered and cleared on the hub", round), ReportEntryVisibilityAlways,
				time.Since(set).Round(time.Second).String())
		}
		Expect(ids).To(HaveLen(2))
	})
})

// syncOperation sets .operation as `argocd app sync` does, the Application's sync options
// included (the namespace is created by the sync).
const syncOperation = `{"operation":{"sync":{"revision":"HEAD","syncOptions":["CreateNamespace=true"]},"initiatedBy":{"username":"e2e"}}}`

// patchHubApp merge-patches the hub Application key.
func patchHubApp(ctx SpecContext, key types.NamespacedName, patch string) {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	Expect(hub.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
