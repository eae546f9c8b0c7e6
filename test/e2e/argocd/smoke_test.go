//go:build e2e

// Package argocd_test is a smoke test of the real Argo CD harness (test/fleet): one envtest
// API server, Argo CD v3's repo-server and application-controller started from
// bin/argocd/argocd, and an Application synced from a local file:// git repository.
//
// Run it with `make test-argocd-smoke`: it is behind the e2e build tag, so `go test ./...`
// and `make test` leave it out, and it needs bin/argocd from `make argocd`. It runs inside a
// private network namespace (the application-controller's metrics listener binds all
// interfaces): TestMain re-executes the test binary in one when it is not in one already.
package argocd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

func TestMain(m *testing.M) {
	os.Exit(fleet.RunInPrivateNetNS(m))
}

func TestArgoCDSmoke(t *testing.T) {
	suite.Run(t, "Argo CD harness smoke")
}

const appYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: smoke
data:
  greeting: hello from git
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: smoke
spec:
  replicas: 1
  selector:
    matchLabels:
      app: smoke
  template:
    metadata:
      labels:
        app: smoke
    spec:
      containers:
      - name: app
        image: registry.example/smoke:1
`

var _ = Describe("Argo CD v3 on an envtest API server", Ordered, func() {
	var (
		api  *framework.APIServer
		argo *fleet.ArgoCD
		repo *fleet.LocalGitRepo
		ctx  = context.Background()
	)

	BeforeAll(func() {
		Expect(fleet.InPrivateNetNS()).To(BeTrue(), "the smoke test must run in a private network namespace")
		var err error
		start := time.Now()
		api, err = framework.StartAPIServer()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(api.Stop)
		GinkgoWriter.Printf("API server up in %s\n", time.Since(start))

		start = time.Now()
		argo, err = fleet.StartArgoCD(fleet.ArgoCDOptions{
			APIServer: api, Name: "smoke", Dir: filepath.Join(GinkgoT().TempDir(), "argocd"),
			AppResync: 5 * time.Second,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				for _, c := range []string{"argocd-application-controller", "argocd-repo-server"} {
					if data, err := os.ReadFile(argo.Logs(c)); err == nil {
						GinkgoWriter.Printf("---- %s ----\n%s\n", c, tailBytes(data, 8000))
					}
				}
			}
			Expect(argo.Stop()).To(Succeed())
		})
		GinkgoWriter.Printf("Argo CD up in %s\n", time.Since(start))

		repo, err = fleet.NewLocalGitRepo(filepath.Join(GinkgoT().TempDir(), "repo"),
			map[string]string{"app/smoke.yaml": appYAML})
		Expect(err).NotTo(HaveOccurred())
	})

	It("syncs an Application from a file:// repository and reports health", func() {
		app := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "Application",
			"metadata":   map[string]any{"name": "smoke", "namespace": argo.Namespace},
			"spec": map[string]any{
				"project": "default",
				"source":  map[string]any{"repoURL": repo.URL, "path": "app", "targetRevision": "main"},
				"destination": map[string]any{
					"server": "https://kubernetes.default.svc", "namespace": "smoke",
				},
				"syncPolicy": map[string]any{
					"automated":   map[string]any{"prune": true, "selfHeal": true},
					"syncOptions": []any{"CreateNamespace=true"},
				},
			},
		}}
		start := time.Now()
		Expect(api.Client.Create(ctx, app)).To(Succeed())

		cm := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(api.Client.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke"}, cm)).To(Succeed())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from git"))
		GinkgoWriter.Printf("ConfigMap applied %s after the Application was created\n", time.Since(start))

		head, err := repo.Head()
		Expect(err).NotTo(HaveOccurred())
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(app.GroupVersionKind())
		Eventually(func(g Gomega) {
			g.Expect(api.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
			sync, _, _ := unstructured.NestedString(got.Object, "status", "sync", "status")
			rev, _, _ := unstructured.NestedString(got.Object, "status", "sync", "revision")
			phase, _, _ := unstructured.NestedString(got.Object, "status", "operationState", "phase")
			g.Expect(sync).To(Equal("Synced"))
			g.Expect(rev).To(Equal(head))
			g.Expect(phase).To(Equal("Succeeded"))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("Application Synced %s after it was created\n", time.Since(start))

		dep := &appsv1.Deployment{}
		Expect(api.Client.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke"}, dep)).To(Succeed())

		// No kube-controller-manager and no kubelet: the Deployment never rolls out, so Argo
		// CD reports it (and the Application) Progressing; the ConfigMap has no health.
		Eventually(func(g Gomega) {
			g.Expect(api.Client.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
			health, _, _ := unstructured.NestedString(got.Object, "status", "health", "status")
			g.Expect(health).To(Equal("Progressing"))
			resources, _, _ := unstructured.NestedSlice(got.Object, "status", "resources")
			byKind := map[string]map[string]any{}
			for _, r := range resources {
				m := r.(map[string]any)
				byKind[m["kind"].(string)] = m
			}
			g.Expect(byKind).To(HaveKey("ConfigMap"))
			g.Expect(byKind).To(HaveKey("Deployment"))
			g.Expect(byKind["ConfigMap"]["status"]).To(Equal("Synced"))
			g.Expect(byKind["Deployment"]["status"]).To(Equal("Synced"))
			// Argo CD 3 no longer persists each resource's health in the Application (it keeps
			// it in redis, with the resource tree) unless --persist-resource-health.
			g.Expect(byKind["Deployment"]).NotTo(HaveKey("health"))
			source, _, _ := unstructured.NestedString(got.Object, "status", "resourceHealthSource")
			g.Expect(source).To(Equal("appTree"))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		health, _, _ := unstructured.NestedMap(got.Object, "status", "health")
		GinkgoWriter.Printf("Application health: %v\n", health)

		By("following a new commit")
		Expect(repo.Commit("change greeting", map[string]string{
			"app/smoke.yaml": replaceOnce(appYAML, "hello from git", "hello again"),
		})).To(Succeed())
		start = time.Now()
		Eventually(func(g Gomega) {
			g.Expect(api.Client.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello again"))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("new commit applied %s after it was made\n", time.Since(start))
	})
})

var _ = Describe("Argo CD v3's applicationset-controller on a hub", Ordered, func() {
	const ns = "hub-argocd" // apart from the cluster's Argo CD the other spec runs
	var (
		api *framework.APIServer
		ctx = context.Background()
	)

	BeforeAll(func() {
		var err error
		api, err = framework.StartAPIServer()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(api.Stop)
		start := time.Now()
		appset, err := fleet.StartArgoCDApplicationSetController(fleet.ArgoCDApplicationSetOptions{
			APIServer: api, Namespace: ns, Dir: filepath.Join(GinkgoT().TempDir(), "appset"),
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				if data, err := os.ReadFile(appset.Logs("argocd-applicationset-controller")); err == nil {
					GinkgoWriter.Printf("---- applicationset-controller ----\n%s\n", tailBytes(data, 8000))
				}
			}
			Expect(appset.Stop()).To(Succeed())
		})
		GinkgoWriter.Printf("applicationset-controller up in %s\n", time.Since(start))
	})

	It("expands a clusterDecisionResource ApplicationSet from OCM placement decisions", func() {
		objs := []client.Object{
			// What our gitopscluster controller writes: the duck-type ConfigMap and an Argo CD
			// cluster secret per managed cluster.
			&corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "ocm-placement-generator", Namespace: ns},
				Data: map[string]string{
					"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "placementdecisions",
					"statusListKey": "decisions", "matchKey": "clusterName",
				},
			},
			&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "cluster1-cluster-secret", Namespace: ns,
					Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
				StringData: map[string]string{"name": "cluster1", "server": "https://cluster1-control-plane:6443",
					"config": `{"tlsClientConfig":{"insecure":true}}`},
			},
		}
		for _, o := range objs {
			Expect(api.Client.Create(ctx, o)).To(Succeed())
		}
		decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
			Name: "smoke-placement-decision-1", Namespace: ns,
			Labels: map[string]string{"cluster.open-cluster-management.io/placement": "smoke-placement"},
		}}
		Expect(api.Client.Create(ctx, decision)).To(Succeed())
		decision.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}, {ClusterName: "not-an-argocd-cluster"}}
		Expect(api.Client.Status().Update(ctx, decision)).To(Succeed())

		set := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "ApplicationSet",
			"metadata":   map[string]any{"name": "smoke", "namespace": ns},
			"spec": map[string]any{
				"generators": []any{map[string]any{"clusterDecisionResource": map[string]any{
					"configMapRef":        "ocm-placement-generator",
					"labelSelector":       map[string]any{"matchLabels": map[string]any{"cluster.open-cluster-management.io/placement": "smoke-placement"}},
					"requeueAfterSeconds": int64(30),
				}}},
				"template": map[string]any{
					"metadata": map[string]any{
						"name":   "{{name}}-smoke",
						"labels": map[string]any{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"},
						"annotations": map[string]any{
							"argocd.argoproj.io/skip-reconcile":                   "true",
							"apps.open-cluster-management.io/ocm-managed-cluster": "{{name}}",
						},
					},
					"spec": map[string]any{
						"project":     "default",
						"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "app", "targetRevision": "HEAD"},
						"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "smoke"},
					},
				},
			},
		}}
		start := time.Now()
		Expect(api.Client.Create(ctx, set)).To(Succeed())
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"})
		Eventually(func() error {
			return api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster1-smoke"}, app)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("Application generated %s after the ApplicationSet was created\n", time.Since(start))
		Expect(app.GetAnnotations()).To(HaveKeyWithValue("apps.open-cluster-management.io/ocm-managed-cluster", "cluster1"))
		Expect(app.GetLabels()).To(HaveKeyWithValue("apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"))
		Expect(app.GetOwnerReferences()).To(ContainElement(HaveField("Kind", "ApplicationSet")))
		// Only decisions naming an Argo CD cluster become Applications.
		apps := &unstructured.UnstructuredList{}
		apps.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationList"})
		Consistently(func(g Gomega) {
			g.Expect(api.Client.List(ctx, apps, client.InNamespace(ns))).To(Succeed())
			g.Expect(apps.Items).To(HaveLen(1))
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})
})

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
