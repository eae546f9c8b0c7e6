package agent_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// hubRequestSpecs: the payload's request annotations become .operation and the refresh
// annotation on the spoke Application, once per request id, however often the work agent
// applies the payload again. The specs play the work agent (writing the request
// annotations) and Argo CD (clearing .operation and the refresh annotation once done).
// They run in order on one Application.
func hubRequestSpecs() {
	const name = "requested"
	key := client.ObjectKey{Namespace: argoNamespace, Name: name}
	sync := func(revision string) map[string]any {
		return map[string]any{
			"sync":        map[string]any{"revision": revision, "prune": true},
			"initiatedBy": map[string]any{"username": "admin"},
		}
	}
	request := func(id string, op map[string]any) string {
		raw, err := json.Marshal(map[string]any{"id": id, "operation": op})
		Expect(err).NotTo(HaveOccurred())
		return string(raw)
	}
	agentWrites := func() int { return managedWrites.Of("applications", name) }

	BeforeAll(func() {
		// A no-op after the specs before this container; lets it run focused on its own.
		Expect(managedServer.InstallArgoCDCRDs()).To(Succeed())
		// Argo CD's status first: its writes and the agent's would conflict.
		createApplication(pulledApp(argoNamespace, name).Build(), syncedHealthy("abc"))
		setAnnotations(key, map[string]any{apps.AnnotationOperationRequest: request("op-1", sync("HEAD"))})
	})

	It("sets the requested operation and the delivered id in one write", func() {
		Eventually(func(g Gomega) {
			app := getSpoke(g, key)
			g.Expect(app.Object["operation"]).To(Equal(sync("HEAD")))
			g.Expect(app.GetAnnotations()).To(HaveKeyWithValue(apps.AnnotationOperationDelivered, "op-1"))
		}).Should(Succeed())
		Expect(agentWrites()).To(Equal(1))
	})

	It("does not set it again once Argo CD has run it, however often the payload is applied", func() {
		argoCDFinishes(key)
		before := agentWrites()
		// The work agent applies the payload again: same request, and another change.
		setAnnotations(key, map[string]any{
			apps.AnnotationOperationRequest: request("op-1", sync("HEAD")),
			"example.com/reapplied":         "1",
		})
		Consistently(func(g Gomega) {
			g.Expect(getSpoke(g, key).Object).NotTo(HaveKey("operation"))
		}).Should(Succeed())
		Expect(agentWrites()).To(Equal(before), "writes of the agent after the request was delivered")
	})

	It("runs a request with a new id", func() {
		setAnnotations(key, map[string]any{apps.AnnotationOperationRequest: request("op-2", sync("HEAD"))})
		Eventually(func(g Gomega) {
			app := getSpoke(g, key)
			g.Expect(app.Object["operation"]).To(Equal(sync("HEAD")))
			g.Expect(app.GetAnnotations()).To(HaveKeyWithValue(apps.AnnotationOperationDelivered, "op-2"))
		}).Should(Succeed())
	})

	It("waits while an operation is in progress, and runs the request once Argo CD clears it", func() {
		// op-2 is still in progress: .operation is set.
		setAnnotations(key, map[string]any{apps.AnnotationOperationRequest: request("op-3", sync("v3"))})
		Consistently(func(g Gomega) {
			app := getSpoke(g, key)
			g.Expect(app.Object["operation"]).To(Equal(sync("HEAD")), "the operation in progress")
			g.Expect(app.GetAnnotations()).To(HaveKeyWithValue(apps.AnnotationOperationDelivered, "op-2"))
		}).Should(Succeed())

		argoCDFinishes(key)
		Eventually(func(g Gomega) {
			app := getSpoke(g, key)
			g.Expect(app.Object["operation"]).To(Equal(sync("v3")))
			g.Expect(app.GetAnnotations()).To(HaveKeyWithValue(apps.AnnotationOperationDelivered, "op-3"))
		}).Should(Succeed())
		argoCDFinishes(key)
	})

	It("sets a refresh request once per id", func() {
		setAnnotations(key, map[string]any{apps.AnnotationRefreshRequest: `{"id":"r-1","refresh":"normal"}`})
		Eventually(func(g Gomega) {
			g.Expect(getSpoke(g, key).GetAnnotations()).To(And(
				HaveKeyWithValue(apps.AnnotationRefresh, "normal"),
				HaveKeyWithValue(apps.AnnotationRefreshDelivered, "r-1")))
		}).Should(Succeed())

		argoCDFinishes(key)
		setAnnotations(key, map[string]any{"example.com/reapplied": "2"})
		Consistently(func(g Gomega) {
			g.Expect(getSpoke(g, key).GetAnnotations()).NotTo(HaveKey(apps.AnnotationRefresh))
		}).Should(Succeed())

		setAnnotations(key, map[string]any{apps.AnnotationRefreshRequest: `{"id":"r-2","refresh":"normal"}`})
		Eventually(func(g Gomega) {
			g.Expect(getSpoke(g, key).GetAnnotations()).To(And(
				HaveKeyWithValue(apps.AnnotationRefresh, "normal"),
				HaveKeyWithValue(apps.AnnotationRefreshDelivered, "r-2")))
		}).Should(Succeed())
		// The operation delivered before is untouched.
		Expect(getSpoke(Default, key).Object).NotTo(HaveKey("operation"))
	})

	It("leaves an Application created on the managed cluster alone", func() {
		local := builders.Application("local-requested").Namespace(argoNamespace).
			Annotation(apps.AnnotationOperationRequest, request("op-1", sync("HEAD"))).Build()
		Expect(managed.Create(ctx, local)).To(Succeed())
		Consistently(func(g Gomega) {
			app := getSpoke(g, client.ObjectKeyFromObject(local))
			g.Expect(app.Object).NotTo(HaveKey("operation"))
			g.Expect(app.GetAnnotations()).NotTo(HaveKey(apps.AnnotationOperationDelivered))
		}).Should(Succeed())
	})
}

// getSpoke reads a spoke Application as stored.
func getSpoke(g Gomega, key client.ObjectKey) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	g.ExpectWithOffset(1, managed.Get(ctx, key, u)).To(Succeed())
	return u
}

// setAnnotations merges annotations into the spoke Application, as the work agent's
// apply of the payload does (nil removes one).
func setAnnotations(key client.ObjectKey, annotations map[string]any) {
	GinkgoHelper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	Expect(managed.Patch(ctx, u, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// argoCDFinishes clears .operation and the refresh annotation, as Argo CD does once the
// operation ran and the refresh happened.
func argoCDFinishes(key client.ObjectKey) {
	GinkgoHelper()
	patch := []byte(`{"operation":null,"metadata":{"annotations":{"` + apps.AnnotationRefresh + `":null}}}`)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	Expect(managed.Patch(ctx, u, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}
