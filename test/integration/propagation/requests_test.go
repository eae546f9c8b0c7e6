package propagation_test

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// The hub's requests (.operation, the refresh annotation) travel as request annotations
// with ids, and leave the hub Application once the ManifestWork's feedback shows the
// spoke's agent delivered them. The specs write that feedback as the work agent would.
var _ = Describe("Requests from the hub", func() {
	syncHEAD := argov1alpha1.Operation{
		Sync:        &argov1alpha1.SyncOperation{Revision: "HEAD"},
		InitiatedBy: argov1alpha1.OperationInitiator{Username: "admin"},
	}

	It("delivers an operation once: its id survives unrelated changes, and the hub's copy goes once the cluster acknowledges it", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("op-once").Cluster(c).Operation(syncHEAD).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))

		By("the payload carries a request, not .operation")
		var first requests.OperationRequest
		Eventually(func(g Gomega) {
			p := currentPayload(ctx, g, w)
			g.Expect(p).NotTo(HaveKey("operation"))
			first = operationRequest(g, p)
		}).Should(Succeed())
		Expect(first.Operation).To(MatchJSON(`{"sync":{"revision":"HEAD"},"initiatedBy":{"username":"admin"},"retry":{}}`))

		By("a change of spec.info keeps the request's id")
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"info":[{"name":"owner","value":"team-a"}]}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			p := currentPayload(ctx, g, w)
			info, _, _ := unstructured.NestedSlice(p, "spec", "info")
			g.Expect(info).To(HaveLen(1))
			g.Expect(operationRequest(g, p).ID).To(Equal(first.ID))
		}).Should(Succeed())

		By("acknowledged, but the hub Application shows no operation started yet: the hub keeps .operation, the work the same request")
		acknowledge(ctx, w, pullmodel.Delivered{Operation: first.ID})
		Consistently(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).To(HaveKey("operation"))
			g.Expect(operationRequest(g, currentPayload(ctx, g, w)).ID).To(Equal(first.ID))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("the hub Application shows the operation running, as appstatus mirrors it: still kept, as Argo CD keeps it until done")
		started := time.Now().UTC().Format(time.RFC3339)
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType, []byte(`{"status":{"operationState":{`+
			`"phase":"Running","startedAt":"`+started+`","operation":{"sync":{"revision":"HEAD"}}}}}`)))).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).To(HaveKey("operation"))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("the hub Application shows it completed: the hub's .operation goes, then the request")
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType, []byte(`{"status":{"operationState":{`+
			`"phase":"Succeeded","startedAt":"`+started+`","operation":{"sync":{"revision":"HEAD"}}}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).NotTo(HaveKey("operation"))
			g.Expect(currentPayload(ctx, g, w)["metadata"]).NotTo(HaveKeyWithValue("annotations", HaveKey(apps.AnnotationOperationRequest)))
		}).Should(Succeed())
		expectNormalEvent(ctx, app, propagation.ReasonOperationDelivered, first.ID+" was delivered to cluster "+c)
		Expect(getApp(ctx, app).Spec.Info).To(HaveLen(1), "the clear touched only .operation")

		By("the same operation asked for again is a new request, which the old acknowledgement does not clear")
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
			[]byte(`{"operation":{"sync":{"revision":"HEAD"},"initiatedBy":{"username":"admin"}}}`)))).To(Succeed())
		var second requests.OperationRequest
		Eventually(func(g Gomega) {
			second = operationRequest(g, currentPayload(ctx, g, w))
		}).Should(Succeed())
		Expect(second.ID).NotTo(Equal(first.ID))
		Consistently(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).To(HaveKey("operation"))
			g.Expect(operationRequest(g, currentPayload(ctx, g, w)).ID).To(Equal(second.ID))
		}).Should(Succeed())
	})

	It("keeps a sync that succeeded until the hub Application shows it compared, so RollingSync does not ask for it again", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("op-compared").Cluster(c).Operation(syncHEAD).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		req := carriedOperationRequest(ctx, w)
		acknowledge(ctx, w, pullmodel.Delivered{Operation: req.ID})

		By("Succeeded, still OutOfSync (Argo CD compares after it writes the result): the hub keeps .operation")
		started := time.Now().UTC().Add(time.Second).Format(time.RFC3339)
		setOperationAndSync := func(phase, sync string) {
			GinkgoHelper()
			Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType, []byte(`{"status":{"sync":{"status":"`+sync+`"},`+
				`"operationState":{"phase":"`+phase+`","startedAt":"`+started+`","operation":{"sync":{"revision":"HEAD"}}}}}`)))).To(Succeed())
		}
		setOperationAndSync("Succeeded", "OutOfSync")
		Consistently(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).To(HaveKey("operation"))
			g.Expect(operationRequest(g, currentPayload(ctx, g, w)).ID).To(Equal(req.ID))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("the same sync asked for again meanwhile (what RollingSync does on a Pending, OutOfSync Application) is the same request")
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
			[]byte(`{"operation":{"sync":{"revision":"HEAD"},"initiatedBy":{"username":"admin"}}}`)))).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(operationRequest(g, currentPayload(ctx, g, w)).ID).To(Equal(req.ID))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("compared: Synced, and the hub's .operation goes")
		setOperationAndSync("Succeeded", "Synced")
		Eventually(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).NotTo(HaveKey("operation"))
			g.Expect(currentPayload(ctx, g, w)["metadata"]).NotTo(HaveKeyWithValue("annotations", HaveKey(apps.AnnotationOperationRequest)))
		}).Should(Succeed())
		expectNormalEvent(ctx, app, propagation.ReasonOperationDelivered, req.ID+" was delivered to cluster "+c)

		By("a sync that succeeded and stays OutOfSync goes once the grace is over, with nothing else changing")
		setOperationAndSync("Succeeded", "OutOfSync")
		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
			[]byte(`{"operation":{"sync":{"revision":"HEAD"},"initiatedBy":{"username":"admin"}}}`)))).To(Succeed())
		var second requests.OperationRequest
		Eventually(func(g Gomega) {
			second = operationRequest(g, currentPayload(ctx, g, w))
			g.Expect(second.ID).NotTo(Equal(req.ID))
		}).Should(Succeed())
		acknowledge(ctx, w, pullmodel.Delivered{Operation: second.ID})
		started = time.Now().UTC().Add(2 * time.Second).Format(time.RFC3339)
		setOperationAndSync("Succeeded", "OutOfSync")
		Consistently(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).To(HaveKey("operation"))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(stored(ctx, g, app).Object).NotTo(HaveKey("operation"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		expectNormalEvent(ctx, app, propagation.ReasonOperationDelivered, second.ID+" was delivered to cluster "+c)
	})

	It("replaces a request changed before delivery and drops one removed before delivery", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("op-changed").Cluster(c).Operation(syncHEAD).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		first := carriedOperationRequest(ctx, w)

		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
			[]byte(`{"operation":{"sync":{"revision":"v1"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			r := operationRequest(g, currentPayload(ctx, g, w))
			g.Expect(r.ID).NotTo(Equal(first.ID))
			g.Expect(r.Operation).To(MatchJSON(`{"sync":{"revision":"v1"},"initiatedBy":{"username":"admin"},"retry":{}}`))
		}).Should(Succeed())

		Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType, []byte(`{"operation":null}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(currentPayload(ctx, g, w)["metadata"]).NotTo(HaveKeyWithValue("annotations", HaveKey(apps.AnnotationOperationRequest)))
		}).Should(Succeed())
	})

	It("delivers two identical refreshes in a row, each once", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("refreshed").Cluster(c).Annotation(apps.AnnotationRefresh, "normal").Build())
		w := expectOnlyWork(ctx, app, c, workName(app))

		var ids []string
		for round := range 2 {
			var r requests.RefreshRequest
			Eventually(func(g Gomega) {
				p := currentPayload(ctx, g, w)
				g.Expect(p["metadata"]).NotTo(HaveKeyWithValue("annotations", HaveKey(apps.AnnotationRefresh)))
				r = refreshRequest(g, p)
				g.Expect(ids).NotTo(ContainElement(r.ID))
			}).Should(Succeed(), "round %d", round+1)
			Expect(r.Refresh).To(Equal("normal"))
			ids = append(ids, r.ID)

			acknowledge(ctx, w, pullmodel.Delivered{Refresh: r.ID})
			Eventually(func(g Gomega) {
				g.Expect(stored(ctx, g, app).GetAnnotations()).NotTo(HaveKey(apps.AnnotationRefresh))
				g.Expect(currentPayload(ctx, g, w)["metadata"]).NotTo(HaveKeyWithValue("annotations", HaveKey(apps.AnnotationRefreshRequest)))
			}).Should(Succeed(), "round %d", round+1)
			expectNormalEvent(ctx, app, propagation.ReasonRefreshDelivered, r.ID)

			// `argocd app get --refresh` again: the same annotation.
			Expect(k8s.Patch(ctx, newStored(app), client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+apps.AnnotationRefresh+`":"normal"}}}`)))).To(Succeed())
		}
	})

	Describe("with Argo CD 3's Application CRD", func() {
		BeforeEach(func() { installArgoCDV3CRDs() })

		It("delivers the fields only Argo CD 3 knows as the user wrote them", func(ctx context.Context) {
			c := newCluster(ctx, nil)
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(argoCD3App), &u.Object)).To(Succeed())
			u.SetAnnotations(map[string]string{apps.AnnotationOCMManagedCluster: c})
			Expect(k8s.Create(ctx, u)).To(Succeed())
			app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()}}
			DeferCleanup(func(ctx context.Context) { deleteApp(ctx, client.ObjectKeyFromObject(app)) })

			// What the API server stored: the v3 CRD kept every field.
			saved := stored(ctx, Default, app)
			w := expectOnlyWork(ctx, app, c, workName(app))
			p := currentPayload(ctx, Default, w)
			for _, path := range [][]string{
				{"spec", "syncPolicy", "automated", "enabled"},
				{"spec", "syncPolicy", "retry", "refresh"},
				{"spec", "source", "kustomize", "ignoreMissingComponents"},
				{"spec", "source", "kustomize", "labelIncludeTemplates"},
			} {
				want, found, err := unstructured.NestedFieldNoCopy(saved.Object, path...)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), "the hub's Application CRD pruned %v", path)
				got, found, err := unstructured.NestedFieldNoCopy(p, path...)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), "the payload lacks %v", path)
				Expect(got).To(Equal(want), "%v", path)
			}
			for _, field := range []string{"syncPolicy", "source"} {
				want, err := json.Marshal(saved.Object["spec"].(map[string]any)[field])
				Expect(err).NotTo(HaveOccurred())
				got, err := json.Marshal(p["spec"].(map[string]any)[field])
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(MatchJSON(want), "spec.%s", field)
			}
			Expect(p).To(HaveKeyWithValue("spec", HaveKeyWithValue("syncPolicy", HaveKeyWithValue("automated", HaveKeyWithValue("enabled", false)))))
		})
	})
})

// argoCD3App is a pulled hub Application with a field of each kind Argo CD 3 added that
// the v2 types drop.
const argoCD3App = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: argocd3-fields
  namespace: argocd
  labels:
    apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps
    path: kustomize-guestbook
    targetRevision: HEAD
    kustomize:
      ignoreMissingComponents: true
      labelIncludeTemplates: true
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    automated:
      enabled: false
      prune: true
    retry:
      limit: 2
      refresh: true
`

var installV3 sync.Once

// installArgoCDV3CRDs replaces the suite's Argo CD v2.14 CRDs with v3's, once, and
// restarts the manager: the API server serves a watch opened before the change with the
// old schema, which drops the new fields. v3's CRDs only add fields, so every other spec
// runs as before.
func installArgoCDV3CRDs() {
	GinkgoHelper()
	var err error
	installV3.Do(func() {
		if err = fleet.InstallArgoCDV3CRDs(apiServer.Config); err == nil {
			stopMgr()
			stopMgr = startManager()
		}
	})
	Expect(err).NotTo(HaveOccurred())
}

// newStored is an unstructured Application naming app, to patch.
func newStored(app *argov1alpha1.Application) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("Application"))
	u.SetNamespace(app.Namespace)
	u.SetName(app.Name)
	return u
}

// stored reads the hub Application as stored.
func stored(ctx context.Context, g Gomega, app *argov1alpha1.Application) *unstructured.Unstructured {
	u := newStored(app)
	g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
	return u
}

// currentPayload reads the payload of the ManifestWork w as it is now.
func currentPayload(ctx context.Context, g Gomega, w *workv1.ManifestWork) map[string]any {
	cur := &workv1.ManifestWork{}
	g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
	g.ExpectWithOffset(1, cur.Spec.Workload.Manifests).To(HaveLen(1))
	var m map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(cur.Spec.Workload.Manifests[0].Raw, &m)).To(Succeed())
	return m
}

func payloadAnnotation(g Gomega, payload map[string]any, key string) string {
	v, found, err := unstructured.NestedString(payload, "metadata", "annotations", key)
	g.ExpectWithOffset(2, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(2, found).To(BeTrue(), "the payload has no annotation %s", key)
	return v
}

func operationRequest(g Gomega, payload map[string]any) requests.OperationRequest {
	r, err := requests.ParseOperationRequest(payloadAnnotation(g, payload, apps.AnnotationOperationRequest))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return r
}

// carriedOperationRequest waits for the payload of w to carry an operation request and
// returns it.
func carriedOperationRequest(ctx context.Context, w *workv1.ManifestWork) requests.OperationRequest {
	GinkgoHelper()
	var r requests.OperationRequest
	Eventually(func(g Gomega) { r = operationRequest(g, currentPayload(ctx, g, w)) }).Should(Succeed())
	return r
}

func refreshRequest(g Gomega, payload map[string]any) requests.RefreshRequest {
	r, err := requests.ParseRefreshRequest(payloadAnnotation(g, payload, apps.AnnotationRefreshRequest))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return r
}

// acknowledge writes the ManifestWork's status feedback as the work agent reports the
// spoke Application's delivered annotations.
func acknowledge(ctx context.Context, w *workv1.ManifestWork, d pullmodel.Delivered) {
	GinkgoHelper()
	var values []workv1.FeedbackValue
	for name, id := range map[string]string{pullmodel.FeedbackOperationDelivered: d.Operation, pullmodel.FeedbackRefreshDelivered: d.Refresh} {
		if id != "" {
			values = append(values, workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(id)}})
		}
	}
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		cfg := cur.Spec.ManifestConfigs[0].ResourceIdentifier
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{
				Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications",
				Name: cfg.Name, Namespace: cfg.Namespace,
			},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
			Conditions: []metav1.Condition{{
				Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable",
				Message: "Resource is available", LastTransitionTime: metav1.Now(),
			}},
		}}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// expectNormalEvent waits for a Normal Event with reason on app whose message contains text.
func expectNormalEvent(ctx context.Context, app *argov1alpha1.Application, reason, text string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(k8s.List(ctx, events, client.InNamespace(app.Namespace),
			client.MatchingFields{"involvedObject.name": app.Name})).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("Type", corev1.EventTypeNormal), HaveField("Reason", reason),
			HaveField("Message", ContainSubstring(text)))))
	}).Should(Succeed())
}
