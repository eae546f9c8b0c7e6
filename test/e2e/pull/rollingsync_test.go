//go:build e2e

package pull_test

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// examples/rollingsync/ as it ships: an ApplicationSet with the RollingSync strategy rolls
// out through the pull model stage by stage, twice: the hub's real applicationset-controller
// (--enable-progressive-syncs) sets .operation on the hub Applications of one step at a
// time, the pull model runs it once on that cluster, and the controller moves on only once
// the hub Application shows the sync done and the Application Healthy. The first rollout
// creates the Applications; the second changes the template (a new path). A request the hub
// kept forever would sync every cluster at once on the second rollout; one delivered twice
// would sync a cluster twice (two history entries); a hub Application that showed Synced
// until its cluster compared the new path would let the second step go first.
//
// The example's only substitution is the repository the fleet serves; the clusters get the
// stage labels its README gives them.
const (
	rollingAppSet = "guestbook-rolling"
	// rollingStageLabel is the ManagedCluster label the example's Placements select.
	rollingStageLabel = "rollout-stage"
	// rollingNS is the example's destination namespace.
	rollingNS     = "guestbook-rolling"
	rollingPath   = "guestbook"
	rollingPathV2 = "guestbook-v2"
)

// rollingConfigMap is the repository's only manifest: a ConfigMap is Healthy once it
// exists, so a synced Application is Healthy without a kubelet.
func rollingConfigMap(value string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: rolling
data:
  value: ` + value + `
`
}

var _ = Describe("RollingSync through the pull model (examples/rollingsync)", Ordered, func() {
	var (
		repo *fleet.LocalGitRepo
		// rolloutOrder is the order of the steps: one cluster per stage.
		rolloutOrder = []string{"cluster1", "cluster2"}
		stages       = map[string]string{"cluster1": "canary", "cluster2": "main"}
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		repo, err = fleet.NewLocalGitRepo(filepath.Join(fleetDir, "git", "rolling"), map[string]string{
			rollingPath + "/configmap.yaml":   rollingConfigMap("first"),
			rollingPathV2 + "/configmap.yaml": rollingConfigMap("second"),
		})
		Expect(err).NotTo(HaveOccurred())

		By("labelling the clusters with their stage, as examples/README.md does")
		for _, c := range rolloutOrder {
			setClusterLabel(ctx, c, rollingStageLabel, stages[c])
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, c := range rolloutOrder {
				setClusterLabel(ctx, c, rollingStageLabel, "")
			}
		})

		set := applyStory(ctx, "rollingsync")
		Eventually(func(g Gomega) {
			for _, c := range rolloutOrder {
				g.Expect(decidedClusters(ctx, g, "guestbook-rolling-"+stages[c])).To(ConsistOf(c))
			}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: fleet.GeneratorConfigMap}, &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("applying examples/rollingsync/'s ApplicationSet (repoURL: the local repository)")
		createRollingAppSet(ctx, set, repo.URL, rolloutOrder)
	})

	for rollout := 1; rollout <= 2; rollout++ {
		It("rolls out step by step, each cluster synced once (rollout "+string(rune('0'+rollout))+")", func(ctx SpecContext) {
			value := "first"
			if rollout == 2 {
				By("changing the template's path: both Applications go OutOfSync, the ApplicationSet rolls out again")
				setRollingPath(ctx, rollingPathV2)
				value = "second"
			}
			head, err := repo.Head()
			Expect(err).NotTo(HaveOccurred())

			start := time.Now()
			// finished[c] is when the cluster's sync of head finished, on the cluster.
			finished := map[string]time.Time{}
			started := map[string]time.Time{}
			Eventually(func(g Gomega) {
				for _, c := range rolloutOrder {
					app := getApp(ctx, g, theFleet.Cluster(c).APIServer.Client, argoNS, c+"-"+rollingAppSet)
					g.Expect(nested(app, "status", "sync", "revision")).To(Equal(head), c)
					g.Expect(nested(app, "status", "sync", "status")).To(Equal("Synced"), c)
					g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"), c)
					history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
					g.Expect(history).To(HaveLen(rollout), "%s: one sync per rollout\n%s", c, toYAML(history))
					started[c] = parseTime(g, nested(app, "status", "operationState", "startedAt"))
					finished[c] = parseTime(g, nested(app, "status", "operationState", "finishedAt"))
					cm := &corev1.ConfigMap{}
					g.Expect(theFleet.Cluster(c).APIServer.Client.Get(ctx, client.ObjectKey{Namespace: rollingNS, Name: "rolling"}, cm)).To(Succeed(), c)
					g.Expect(cm.Data).To(HaveKeyWithValue("value", value), c)
				}
			}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
			AddReportEntry("RollingSync rollout "+string(rune('0'+rollout))+" done", time.Since(start).Round(time.Second).String())

			By("checking each sync was the ApplicationSet controller's request, run once")
			for _, c := range rolloutOrder {
				app := getApp(ctx, Default, theFleet.Cluster(c).APIServer.Client, argoNS, c+"-"+rollingAppSet)
				Expect(nested(app, "status", "operationState", "operation", "initiatedBy", "username")).To(Equal("applicationset-controller"), c)
			}
			// In the first rollout both Applications are new, so Waiting until their step
			// comes. In the second, both hub Applications show OutOfSync as soon as the
			// template changed their path, before either cluster compared it, so both go
			// back to Waiting together and the steps keep their order.
			By("checking the second step started only after the first finished")
			Expect(started[rolloutOrder[1]]).To(BeTemporally(">=", finished[rolloutOrder[0]]),
				"%s started at %s, before %s finished at %s", rolloutOrder[1], started[rolloutOrder[1]], rolloutOrder[0], finished[rolloutOrder[0]])

			By("checking the ApplicationSet saw both Applications Healthy, and no sync runs again")
			Eventually(func(g Gomega) {
				set := &unstructured.Unstructured{}
				set.SetGroupVersionKind(appSetGVK)
				g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: rollingAppSet}, set)).To(Succeed())
				statuses, _, _ := unstructured.NestedSlice(set.Object, "status", "applicationStatus")
				g.Expect(statuses).To(HaveLen(len(rolloutOrder)), toYAML(statuses))
				for _, s := range statuses {
					g.Expect(s).To(HaveKeyWithValue("status", "Healthy"), toYAML(statuses))
				}
				for _, c := range rolloutOrder {
					hubApp := getApp(ctx, g, hub, argoNS, c+"-"+rollingAppSet)
					g.Expect(hubApp.Object).NotTo(HaveKey("operation"), "%s: the hub request is cleared once delivered", c)
				}
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			Consistently(func(g Gomega) {
				for _, c := range rolloutOrder {
					app := getApp(ctx, g, theFleet.Cluster(c).APIServer.Client, argoNS, c+"-"+rollingAppSet)
					history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
					g.Expect(history).To(HaveLen(rollout), "%s: synced again", c)
				}
			}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		})
	}
})

// createRollingAppSet creates set, the example's RollingSync ApplicationSet, reading
// repoURL, and registers its clean-up: it and everything it made gone.
func createRollingAppSet(ctx SpecContext, set *unstructured.Unstructured, repoURL string, order []string) {
	GinkgoHelper()
	Expect(set.GetName()).To(Equal(rollingAppSet))
	Expect(unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL")).To(Succeed())
	Expect(hub.Create(ctx, set)).To(Succeed())

	DeferCleanup(func(ctx SpecContext) {
		del := &unstructured.Unstructured{}
		del.SetGroupVersionKind(appSetGVK)
		del.SetNamespace(argoNS)
		del.SetName(rollingAppSet)
		Expect(client.IgnoreNotFound(hub.Delete(ctx, del, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
		Eventually(func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(appSetGVK)
			err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: rollingAppSet}, u)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationSet %s: %v", rollingAppSet, err)
			for _, c := range order {
				u.SetGroupVersionKind(applicationGVK)
				err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: c + "-" + rollingAppSet}, u)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s: %v", c, err)
				works := &workv1.ManifestWorkList{}
				g.Expect(hub.List(ctx, works, client.InNamespace(c))).To(Succeed())
				for _, mw := range works.Items {
					g.Expect(mw.Annotations).NotTo(HaveKeyWithValue("apps.open-cluster-management.io/hub-application-name", c+"-"+rollingAppSet), mw.Name)
				}
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}, NodeTimeout(3*time.Minute))
}

// setRollingPath makes the RollingSync ApplicationSet's template take its manifests from
// path, as a user editing the ApplicationSet would.
func setRollingPath(ctx SpecContext, path string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(appSetGVK)
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: rollingAppSet}, set)).To(Succeed())
		g.Expect(unstructured.SetNestedField(set.Object, path, "spec", "template", "spec", "source", "path")).To(Succeed())
		g.Expect(hub.Update(ctx, set)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// bindGlobalClusterSet binds the global ManagedClusterSet (every cluster) to argocd with
// examples/hub-rendered/01-managedclustersetbinding.yaml, as `clusteradm clusterset bind
// global --namespace argocd` would. Other scenarios bind it
// too: a binding made here goes when the calling container's clean-ups run, one that
// exists is left as it is.
func bindGlobalClusterSet(ctx SpecContext) {
	GinkgoHelper()
	if binding := createGlobalClusterSetBinding(ctx); binding != nil {
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, binding))).To(Succeed())
		})
	}
}

// createGlobalClusterSetBinding creates the binding of bindGlobalClusterSet once the
// global set exists, and returns it; nil when it existed already.
func createGlobalClusterSetBinding(ctx SpecContext) client.Object {
	GinkgoHelper()
	Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Name: "global"}, &clusterv1beta2.ManagedClusterSet{})
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	binding, err := framework.ReadExample("hub-rendered/01-managedclustersetbinding.yaml")
	Expect(err).NotTo(HaveOccurred())
	Expect(binding.GetNamespace()).To(Equal(argoNS))
	err = hub.Create(ctx, binding)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred(), "creating the global ManagedClusterSetBinding")
	return binding
}

func parseTime(g Gomega, s string) time.Time {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	g.Expect(err).NotTo(HaveOccurred(), "time %q", s)
	return t
}
