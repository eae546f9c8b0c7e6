package propagation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

const appNamespace = "argocd"

var clusterSeq atomic.Int32

var _ = BeforeEach(func(ctx context.Context) {
	ensureNamespace(ctx, appNamespace)
})

func ensureNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// newCluster registers a ManagedCluster with its namespace under a fresh name.
func newCluster(ctx context.Context, lbls map[string]string) string {
	GinkgoHelper()
	name := fmt.Sprintf("cluster%d", clusterSeq.Add(1))
	ensureNamespace(ctx, name)
	Expect(k8s.Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	})).To(Succeed())
	return name
}

// hubApp starts a pulled hub Application whose destination is a placeholder:
// propagation replaces it with the managed cluster's own API server.
func hubApp(name string) *builders.ApplicationBuilder {
	return builders.Application(name).Pulled().
		Destination(argov1alpha1.ApplicationDestination{Name: "placeholder", Namespace: builders.GuestbookNamespace})
}

// createApp creates app on the hub and, when the spec ends, deletes it.
func createApp(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.Application {
	GinkgoHelper()
	Expect(k8s.Create(ctx, app)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { deleteApp(ctx, client.ObjectKeyFromObject(app)) })
	return app
}

// deleteApp deletes an Application, releasing any finalizer left on it.
func deleteApp(ctx context.Context, key types.NamespacedName) {
	GinkgoHelper()
	app := &argov1alpha1.Application{}
	if err := k8s.Get(ctx, key, app); apierrors.IsNotFound(err) {
		return
	}
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, app))).To(Succeed())
	Eventually(func(g Gomega) {
		err := k8s.Get(ctx, key, app)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		app.Finalizers = nil
		g.Expect(client.IgnoreNotFound(k8s.Update(ctx, app))).To(Succeed())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, app))).To(BeTrue())
	}).Should(Succeed())
}

func getApp(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.Application {
	GinkgoHelper()
	got := &argov1alpha1.Application{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
	return got
}

// worksOf lists every ManifestWork, in any namespace, that names key as its hub Application.
func worksOf(ctx context.Context, key types.NamespacedName) []workv1.ManifestWork {
	GinkgoHelper()
	list := &workv1.ManifestWorkList{}
	Expect(k8s.List(ctx, list)).To(Succeed())
	var out []workv1.ManifestWork
	for _, w := range list.Items {
		if w.Annotations[apps.AnnotationHubApplicationNamespace] == key.Namespace &&
			w.Annotations[apps.AnnotationHubApplicationName] == key.Name {
			out = append(out, w)
		}
	}
	return out
}

func workNames(ctx context.Context, key types.NamespacedName) []string {
	var names []string
	for _, w := range worksOf(ctx, key) {
		names = append(names, w.Namespace+"/"+w.Name)
	}
	return names
}

// expectOnlyWork waits until the only ManifestWork of app is namespace/name and returns it.
func expectOnlyWork(ctx context.Context, app *argov1alpha1.Application, namespace, name string) *workv1.ManifestWork {
	GinkgoHelper()
	key := client.ObjectKeyFromObject(app)
	Eventually(func() []string { return workNames(ctx, key) }).Should(ConsistOf(namespace + "/" + name))
	w := &workv1.ManifestWork{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, w)).To(Succeed())
	return w
}

// expectNoWork waits until no ManifestWork names app's key, and checks it stays so.
func expectNoWork(ctx context.Context, key types.NamespacedName) {
	GinkgoHelper()
	Eventually(func() []string { return workNames(ctx, key) }).Should(BeEmpty())
	Consistently(func() []string { return workNames(ctx, key) }).Should(BeEmpty())
}

func workName(app *argov1alpha1.Application) string {
	return app.Name + "-" + string(app.UID)[:5]
}

// expectEvent waits for a Warning Event with reason on app whose message contains text,
// from propagation's Event source (selected as docs/reference/events-and-conditions.md
// says to).
func expectEvent(ctx context.Context, app *argov1alpha1.Application, reason, text string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(k8s.List(ctx, events, client.InNamespace(app.Namespace),
			client.MatchingFields{"involvedObject.name": app.Name, "source": propagation.EventSource})).To(Succeed())
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == app.UID && e.Type == corev1.EventTypeWarning && e.Reason == reason &&
				strings.Contains(e.Message, text) {
				return
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		g.Expect(seen).To(ContainElement(ContainSubstring(text)), "no %s Event", reason)
	}).Should(Succeed())
}

func payloadOf(w *workv1.ManifestWork) map[string]any {
	GinkgoHelper()
	Expect(w.Spec.Workload.Manifests).To(HaveLen(1))
	var m map[string]any
	Expect(json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m)).To(Succeed())
	return m
}

// expectWorkAt waits until the ManifestWork key delivers the Application at targetRevision.
func expectWorkAt(ctx context.Context, key client.ObjectKey, targetRevision string) {
	GinkgoHelper()
	Eventually(func(g Gomega) any {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, key, cur)).To(Succeed())
		return payloadOf(cur)["spec"].(map[string]any)["source"].(map[string]any)["targetRevision"]
	}).Should(Equal(targetRevision))
}

var _ = Describe("Propagation", func() {
	It("turns the golden Application into exactly the contracted ManifestWork", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("golden-guestbook").Cluster(c).
			Finalizer(pullmodel.ResourcesFinalizer).
			Label("app.kubernetes.io/part-of", "guestbook").
			Annotation(apps.AnnotationRefresh, "hard").
			Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "openshift-gitops").
			OwnerReference(metav1.OwnerReference{
				APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "guestbook",
				UID: "0b0d3e8c-0000-4000-8000-000000000001"}).
			Operation(argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD", Prune: true}}).
			Build())

		w := expectOnlyWork(ctx, app, c, workName(app))
		Expect(w.Labels).To(Equal(map[string]string{
			"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true",
			"apps.open-cluster-management.io/application-set":             "true",
		}))
		Expect(w.Annotations).To(Equal(map[string]string{
			"apps.open-cluster-management.io/hub-application-namespace": "argocd",
			"apps.open-cluster-management.io/hub-application-name":      "golden-guestbook",
			"apps.open-cluster-management.io/hosting-applicationset":    "argocd/guestbook",
		}))
		// The hub's .operation and refresh annotation travel as requests, under ids of the
		// controller's choosing (requests_test.go follows them).
		payload := payloadOf(w)
		annotations := payload["metadata"].(map[string]any)["annotations"].(map[string]any)
		op, err := requests.ParseOperationRequest(annotations[apps.AnnotationOperationRequest].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(op.Operation).To(MatchJSON(`{"sync":{"revision":"HEAD","prune":true},"initiatedBy":{},"retry":{}}`))
		refresh, err := requests.ParseRefreshRequest(annotations[apps.AnnotationRefreshRequest].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(refresh.Refresh).To(Equal("hard"))
		delete(annotations, apps.AnnotationOperationRequest)
		delete(annotations, apps.AnnotationRefreshRequest)
		Expect(cmp.Diff(map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "Application",
			"metadata": map[string]any{
				"name":      "golden-guestbook",
				"namespace": "openshift-gitops",
				"labels":    map[string]any{"app.kubernetes.io/part-of": "guestbook"},
				"annotations": map[string]any{
					"apps.open-cluster-management.io/hub-application-namespace": "argocd",
					"apps.open-cluster-management.io/hub-application-name":      "golden-guestbook",
					"apps.open-cluster-management.io/hosting-applicationset":    "argocd/guestbook",
				},
				"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
			},
			"spec": map[string]any{
				"project": "default",
				"source": map[string]any{
					"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": "guestbook", "targetRevision": "HEAD"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
			},
		}, payload)).To(BeEmpty())
		Expect(cmp.Diff([]workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{
				Group: "argoproj.io", Resource: "applications", Name: "golden-guestbook", Namespace: "openshift-gitops"},
			FeedbackRules: []workv1.FeedbackRule{{
				Type: workv1.JSONPathsType,
				JsonPaths: []workv1.JsonPath{
					{Name: "healthStatus", Path: ".status.health.status"},
					{Name: "syncStatus", Path: ".status.sync.status"},
					{Name: "operationStatePhase", Path: ".status.operationState.phase"},
					{Name: "operationStateStartedAt", Path: ".status.operationState.startedAt"},
					{Name: "syncRevision", Path: ".status.sync.revision"},
					{Name: "operationDelivered", Path: `.metadata.annotations.apps\.open-cluster-management\.io/operation-delivered`},
					{Name: "refreshDelivered", Path: `.metadata.annotations.apps\.open-cluster-management\.io/refresh-delivered`},
				},
			}},
			FeedbackScrapeType: workv1.FeedbackPollType,
			UpdateStrategy: &workv1.UpdateStrategy{
				Type: workv1.UpdateStrategyTypeServerSideApply,
				ServerSideApply: &workv1.ServerSideApplyConfig{
					Force: true, FieldManager: "work-agent",
					IgnoreFields: []workv1.IgnoreField{{
						Condition: workv1.IgnoreFieldsConditionOnSpokeChange,
						JSONPaths: []string{".operation", `.metadata.annotations.argocd\.argoproj\.io/refresh`},
					}},
				},
			},
		}}, w.Spec.ManifestConfigs)).To(BeEmpty())
		Expect(w.Spec.DeleteOption).To(BeNil())
	})

	It("propagates updates and does not write when nothing the work carries changed", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("updated").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))

		By("a hub status change is not propagated and causes no write")
		got := getApp(ctx, app)
		got.Status.Health.Status = "Healthy"
		got.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Consistently(func(g Gomega) string {
			cur := &workv1.ManifestWork{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
			return cur.ResourceVersion
		}).Should(Equal(w.ResourceVersion))

		By("a spec change reaches the work")
		got = getApp(ctx, app)
		got.Spec.Source.TargetRevision = "v2"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		expectWorkAt(ctx, client.ObjectKeyFromObject(w), "v2")
		expectOnlyWork(ctx, app, c, workName(app))
	})

	Describe("cleanup: exactly one ManifestWork per live marked Application", func() {
		It("deletes the work, then releases the resources finalizer so the Application goes", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("with-finalizer").Cluster(c).Finalizer(pullmodel.ResourcesFinalizer).Build())
			expectOnlyWork(ctx, app, c, workName(app))

			Expect(k8s.Delete(ctx, getApp(ctx, app))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(app), &argov1alpha1.Application{}))
			}).Should(BeTrue())
			expectNoWork(ctx, client.ObjectKeyFromObject(app))
		})

		// Found by the chaos run (seed 303): the hub's Argo CD skips an Application whose
		// skip-reconcile is still "true", so after an unmark its deletion hung for ever.
		DescribeTable("releases the resources finalizer of an Application unmarked before its deletion",
			func(ctx context.Context, name string, unmark func(*argov1alpha1.Application)) {
				c := newCluster(ctx, nil)
				app := createApp(ctx, hubApp(name).Cluster(c).Finalizer(pullmodel.ResourcesFinalizer).Build())
				expectOnlyWork(ctx, app, c, workName(app))

				got := getApp(ctx, app)
				unmark(got)
				Expect(k8s.Update(ctx, got)).To(Succeed())
				expectNoWork(ctx, client.ObjectKeyFromObject(app))
				Expect(getApp(ctx, app).Finalizers).To(ContainElement(pullmodel.ResourcesFinalizer), "released before the deletion")

				Expect(k8s.Delete(ctx, getApp(ctx, app))).To(Succeed())
				Eventually(func() bool {
					return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(app), &argov1alpha1.Application{}))
				}).Should(BeTrue())
			},
			Entry("label false", "unmarked-false", func(a *argov1alpha1.Application) {
				a.Labels[apps.LabelPullToOCMManagedCluster] = "false"
			}),
			Entry("label removed", "unmarked-removed", func(a *argov1alpha1.Application) {
				delete(a.Labels, apps.LabelPullToOCMManagedCluster)
			}),
		)

		It("leaves the resources finalizer of an Application handed to the hub's Argo CD", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("handed-back").Cluster(c).Finalizer(pullmodel.ResourcesFinalizer).Build())
			expectOnlyWork(ctx, app, c, workName(app))
			got := getApp(ctx, app)
			delete(got.Labels, apps.LabelPullToOCMManagedCluster)
			got.Annotations[apps.AnnotationSkipReconcile] = "false"
			Expect(k8s.Update(ctx, got)).To(Succeed())
			expectNoWork(ctx, client.ObjectKeyFromObject(app))

			Expect(k8s.Delete(ctx, getApp(ctx, app))).To(Succeed())
			Consistently(func() []string { return getApp(ctx, app).Finalizers }).Should(ContainElement(pullmodel.ResourcesFinalizer))
			// The hub's Argo CD would finalize it; stand in for it.
			got = getApp(ctx, app)
			got.Finalizers = nil
			Expect(k8s.Update(ctx, got)).To(Succeed())
		})

		It("keeps the finalizer while a ManifestWork is still there", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("work-held").Cluster(c).Finalizer(pullmodel.ResourcesFinalizer).Build())
			w := expectOnlyWork(ctx, app, c, workName(app))
			// Stand in for the work agent's cleanup finalizer.
			w.Finalizers = append(w.Finalizers, "test.open-cluster-management.io/hold")
			Expect(k8s.Update(ctx, w)).To(Succeed())

			Expect(k8s.Delete(ctx, getApp(ctx, app))).To(Succeed())
			Eventually(func(g Gomega) {
				cur := &workv1.ManifestWork{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
				g.Expect(cur.DeletionTimestamp).NotTo(BeNil())
			}).Should(Succeed())
			Consistently(func() []string { return getApp(ctx, app).Finalizers }).Should(ContainElement(pullmodel.ResourcesFinalizer))

			cur := &workv1.ManifestWork{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
			cur.Finalizers = nil
			Expect(k8s.Update(ctx, cur)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(app), &argov1alpha1.Application{}))
			}).Should(BeTrue())
			expectNoWork(ctx, client.ObjectKeyFromObject(app))
		})

		It("deletes the work of an Application deleted without a finalizer", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("no-finalizer").Cluster(c).Build())
			expectOnlyWork(ctx, app, c, workName(app))
			Expect(k8s.Delete(ctx, getApp(ctx, app))).To(Succeed())
			expectNoWork(ctx, client.ObjectKeyFromObject(app))
		})

		It("moves the work when the target cluster changes", func(ctx context.Context) {
			c1, c2 := newCluster(ctx, nil), newCluster(ctx, nil)
			app := createApp(ctx, hubApp("retarget").Cluster(c1).Build())
			expectOnlyWork(ctx, app, c1, workName(app))

			got := getApp(ctx, app)
			got.Annotations[apps.AnnotationOCMManagedCluster] = c2
			Expect(k8s.Update(ctx, got)).To(Succeed())
			expectOnlyWork(ctx, app, c2, workName(app))
			Consistently(func() []string { return workNames(ctx, client.ObjectKeyFromObject(app)) }).
				Should(ConsistOf(c2 + "/" + workName(app)))
		})

		DescribeTable("deletes the work when the Application is no longer marked",
			func(ctx context.Context, unmark func(*argov1alpha1.Application)) {
				c := newCluster(ctx, nil)
				app := createApp(ctx, hubApp("unmarked-"+c).Cluster(c).Build())
				expectOnlyWork(ctx, app, c, workName(app))
				got := getApp(ctx, app)
				unmark(got)
				Expect(k8s.Update(ctx, got)).To(Succeed())
				expectNoWork(ctx, client.ObjectKeyFromObject(app))
			},
			Entry("label removed", func(a *argov1alpha1.Application) { delete(a.Labels, apps.LabelPullToOCMManagedCluster) }),
			Entry("label false", func(a *argov1alpha1.Application) { a.Labels[apps.LabelPullToOCMManagedCluster] = "false" }),
		)

		It("replaces the work of a recreated Application (new UID)", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			old := createApp(ctx, hubApp("recreated").Cluster(c).Build())
			expectOnlyWork(ctx, old, c, workName(old))

			Expect(k8s.Delete(ctx, getApp(ctx, old))).To(Succeed())
			app := createApp(ctx, hubApp("recreated").Cluster(c).Build())
			Expect(app.UID).NotTo(Equal(old.UID))
			expectOnlyWork(ctx, app, c, workName(app))
		})

		It("deletes a stray work left for the Application under another name", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			app := createApp(ctx, hubApp("stray").Cluster(c).Build())
			want := expectOnlyWork(ctx, app, c, workName(app))
			stray := want.DeepCopy()
			stray.ObjectMeta = metav1.ObjectMeta{Name: "stray-00000", Namespace: c, Labels: want.Labels, Annotations: want.Annotations}
			Expect(k8s.Create(ctx, stray)).To(Succeed())
			expectOnlyWork(ctx, app, c, workName(app))
		})

		It("rebuilds its state from the API after a restart", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			gone := createApp(ctx, hubApp("restart-deleted").Cluster(c).Build())
			unmarked := createApp(ctx, hubApp("restart-unmarked").Cluster(c).Build())
			moved := createApp(ctx, hubApp("restart-moved").Cluster(c).Build())
			kept := createApp(ctx, hubApp("restart-kept").Cluster(c).Build())
			for _, a := range []*argov1alpha1.Application{gone, unmarked, moved, kept} {
				expectOnlyWork(ctx, a, c, workName(a))
			}

			stopMgr()
			c2 := newCluster(ctx, nil)
			Expect(k8s.Delete(ctx, getApp(ctx, gone))).To(Succeed())
			got := getApp(ctx, unmarked)
			got.Labels[apps.LabelPullToOCMManagedCluster] = "false"
			Expect(k8s.Update(ctx, got)).To(Succeed())
			got = getApp(ctx, moved)
			got.Annotations[apps.AnnotationOCMManagedCluster] = c2
			Expect(k8s.Update(ctx, got)).To(Succeed())
			stopMgr = startManager()

			expectNoWork(ctx, client.ObjectKeyFromObject(gone))
			expectNoWork(ctx, client.ObjectKeyFromObject(unmarked))
			expectOnlyWork(ctx, moved, c2, workName(moved))
			expectOnlyWork(ctx, kept, c, workName(kept))
		})
	})

	It("does not target the local cluster", func(ctx context.Context) {
		c := newCluster(ctx, map[string]string{propagation.LabelLocalCluster: "true"})
		app := createApp(ctx, hubApp("local").Cluster(c).Build())
		expectEvent(ctx, app, propagation.ReasonLocalCluster, "is the hub itself")
		expectNoWork(ctx, client.ObjectKeyFromObject(app))
	})

	It("names the work of an over-long Application with a stable hash suffix", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp(strings.Repeat("a", 250)).Cluster(c).Build())
		Eventually(func() []string { return workNames(ctx, client.ObjectKeyFromObject(app)) }).Should(HaveLen(1))
		w := worksOf(ctx, client.ObjectKeyFromObject(app))[0]
		Expect(w.Name).To(HaveLen(253))
		Expect(w.Name).To(HavePrefix(strings.Repeat("a", 200)))
		Expect(w.Name).To(Equal(pullmodel.WorkName(getApp(ctx, app))))
	})
})
