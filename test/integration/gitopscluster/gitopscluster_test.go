package gitopscluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
)

const (
	timeout  = 20 * time.Second
	interval = 100 * time.Millisecond
)

var seq atomic.Int32

// unique returns prefix with a suffix no other spec uses: specs share one API server.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// addedMessage is a successful GitOpsCluster's message for clusters, which it lists by
// name in order: "cluster-10" before "cluster-9", whatever order unique gave them.
func addedMessage(argoNamespace string, clusters ...string) string {
	sorted := slices.Sorted(slices.Values(clusters))
	return fmt.Sprintf("Added %d managed clusters [%s] to Argo CD namespace %s", len(sorted), strings.Join(sorted, " "), argoNamespace)
}

// --- fixtures ---

func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func createManagedCluster(ctx context.Context, name string, labels map[string]string) {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}
	Expect(k8s.Create(ctx, mc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, mc))).To(Succeed()) })
}

func createPlacement(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
}

// setDecisions makes the Placement's one PlacementDecision decide on clusters.
func setDecisions(ctx context.Context, ns, placement string, clusters ...string) {
	GinkgoHelper()
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: placement + "-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: placement},
	}}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(pd), pd)
	if apierrors.IsNotFound(err) {
		Expect(k8s.Create(ctx, pd)).To(Succeed())
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{}
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: ""})
	}
	Expect(k8s.Status().Update(ctx, pd)).To(Succeed())
}

func placementRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: name}
}

func createGitOpsCluster(ctx context.Context, ns, name, argoNs string, ref *corev1.ObjectReference, blank *bool) *appsv1beta1.GitOpsCluster {
	GinkgoHelper()
	gc := &appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer:                appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNs},
			PlacementRef:              ref,
			CreateBlankClusterSecrets: blank,
		},
	}
	Expect(k8s.Create(ctx, gc)).To(Succeed())
	return gc
}

// --- shared Eventually helpers ---

func getGitOpsCluster(ctx context.Context, key client.ObjectKey) func(Gomega) *appsv1beta1.GitOpsCluster {
	return func(g Gomega) *appsv1beta1.GitOpsCluster {
		gc := &appsv1beta1.GitOpsCluster{}
		g.Expect(k8s.Get(ctx, key, gc)).To(Succeed())
		return gc
	}
}

// expectPhase waits for phase and the Ready condition's reason, and returns the object.
func expectPhase(ctx context.Context, key client.ObjectKey, phase, reason string) *appsv1beta1.GitOpsCluster {
	GinkgoHelper()
	var got *appsv1beta1.GitOpsCluster
	Eventually(func(g Gomega) {
		got = getGitOpsCluster(ctx, key)(g)
		g.Expect(got.Status.Phase).To(Equal(phase), "message: %s", got.Status.Message)
		ready := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(reason))
		g.Expect(ready.ObservedGeneration).To(Equal(got.Generation))
	}, timeout, interval).Should(Succeed())
	return got
}

func expectCondition(gc *appsv1beta1.GitOpsCluster, typ string, status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	c := meta.FindStatusCondition(gc.Status.Conditions, typ)
	Expect(c).NotTo(BeNil(), "condition %s", typ)
	Expect(c.Status).To(Equal(status), "condition %s: %s", typ, c.Message)
	Expect(c.Reason).To(Equal(reason), "condition %s: %s", typ, c.Message)
}

// expectEvent waits for an Event of type and reason on the GitOpsCluster, from the
// controller's Event source.
func expectEvent(ctx context.Context, gc client.ObjectKey, eventType, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		var list corev1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(gc.Namespace))).To(Succeed())
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "GitOpsCluster" && e.InvolvedObject.Name == gc.Name && e.Source.Component == gitopscluster.EventSource {
				seen = append(seen, e.Type+"/"+e.Reason)
			}
		}
		return seen
	}, timeout, interval).Should(ContainElement(eventType + "/" + reason))
}

func secretKey(argoNs, cluster string) client.ObjectKey {
	return client.ObjectKey{Namespace: argoNs, Name: cluster + "-cluster-secret"}
}

func getSecret(ctx context.Context, key client.ObjectKey) func(Gomega) *corev1.Secret {
	return func(g Gomega) *corev1.Secret {
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, key, s)).To(Succeed())
		return s
	}
}

func expectGone(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}, timeout, interval).Should(BeTrue(), "%T %s still exists", obj, client.ObjectKeyFromObject(obj))
}

// ourSecrets lists the cluster Secrets in argoNs by cluster name.
func ourSecrets(ctx context.Context, g Gomega, argoNs string) map[string]corev1.Secret {
	var list corev1.SecretList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(argoNs),
		client.MatchingLabels{apps.LabelManagedBy: apps.ManagedByValue})).To(Succeed())
	out := map[string]corev1.Secret{}
	for _, s := range list.Items {
		out[s.Labels[gitopscluster.LabelClusterName]] = s
	}
	return out
}

// reconcileCount is how many reconciles the gitopscluster controller has finished.
func reconcileCount() float64 {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == gitopscluster.ControllerName {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// resourceVersions of everything the controller writes for a GitOpsCluster.
func resourceVersions(ctx context.Context, gcKey client.ObjectKey, argoNs string) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	objs := map[string]client.Object{
		"gitopscluster": &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: gcKey.Namespace, Name: gcKey.Name}},
		"cm/ocm":        &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: "ocm-placement-generator"}},
		"cm/acm":        &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: "acm-placement"}},
		"role":          &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: argoNs + "-applicationset-controller-placement"}},
		"rolebinding":   &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: argoNs + "-applicationset-controller-placement"}},
	}
	for name, o := range objs {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		out[name] = o.GetResourceVersion()
	}
	var list corev1.SecretList
	Expect(k8s.List(ctx, &list, client.InNamespace(argoNs))).To(Succeed())
	for _, s := range list.Items {
		out["secret/"+s.Name] = s.ResourceVersion
	}
	return out
}

var _ = Describe("GitOpsCluster", func() {
	var (
		argoNs string
		c1, c2 string
	)

	BeforeEach(func(ctx context.Context) {
		argoNs = unique("argocd")
		createNamespace(ctx, argoNs)
		c1, c2 = unique("cluster"), unique("cluster")
		createManagedCluster(ctx, c1, map[string]string{"env": "prod", "region": "eu"})
		createManagedCluster(ctx, c2, map[string]string{"env": "dev"})
		createPlacement(ctx, argoNs, "all")
		setDecisions(ctx, argoNs, "all", c1, c2)
	})

	It("registers one blank Argo CD cluster Secret per decided cluster and the placement generator config", func(ctx context.Context) {
		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		key := client.ObjectKeyFromObject(gc)

		got := expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Expect(got.Status.Message).To(Equal(addedMessage(argoNs, c1, c2)))
		Expect(got.Status.LastUpdateTime.IsZero()).To(BeFalse())
		Expect(got.Finalizers).To(ContainElement(appsv1beta1.GitOpsClusterFinalizer))
		for _, typ := range []string{appsv1beta1.ConditionPlacementResolved, appsv1beta1.ConditionArgoNamespaceFound,
			appsv1beta1.ConditionClusterSecretsSynced, appsv1beta1.ConditionGeneratorConfigured} {
			c := meta.FindStatusCondition(got.Status.Conditions, typ)
			Expect(c).NotTo(BeNil(), typ)
			Expect(c.Status).To(Equal(metav1.ConditionTrue), typ)
		}
		expectCondition(got, appsv1beta1.ConditionClusterSecretsSynced, metav1.ConditionTrue, appsv1beta1.ReasonClusterSecretsSynced)
		expectEvent(ctx, key, corev1.EventTypeNormal, gitopscluster.EventReasonSynced)

		for cluster, extra := range map[string]map[string]string{
			c1: {"env": "prod", "region": "eu"},
			c2: {"env": "dev"},
		} {
			wantLabels := map[string]string{
				"argocd.argoproj.io/secret-type":                                            "cluster",
				"apps.open-cluster-management.io/acm-cluster":                               "true",
				"apps.open-cluster-management.io/cluster-name":                              cluster,
				"apps.open-cluster-management.io/cluster-server":                            cluster + "-control-plane",
				"app.kubernetes.io/managed-by":                                              "argocd-pull-addon",
				"owner.gitopscluster.apps.open-cluster-management.io/" + argoNs + ".gitops": "true",
			}
			for k, v := range extra {
				wantLabels[k] = v
			}
			// The ManagedCluster's labels arrive with its event: a reconcile that ran before
			// the manager's cache held the ManagedCluster registered the Secret without them
			// (as for a cluster that does not exist yet, below) and the event completes it.
			Eventually(func(g Gomega) map[string]string {
				return getSecret(ctx, secretKey(argoNs, cluster))(g).Labels
			}).Should(Equal(wantLabels))
			s := getSecret(ctx, secretKey(argoNs, cluster))(Default)
			Expect(s.Annotations).To(Equal(map[string]string{
				"owner.gitopscluster.apps.open-cluster-management.io/" + argoNs + ".gitops": argoNs + "/gitops",
			}))
			Expect(s.Data).To(Equal(map[string][]byte{
				"name":   []byte(cluster),
				"server": []byte("https://" + cluster + "-control-plane"),
			}))
			Expect(s.Type).To(Equal(corev1.SecretTypeOpaque))
			// No owner reference: the garbage collector cannot see owners in other
			// namespaces and would delete a Secret they share.
			Expect(s.OwnerReferences).To(BeEmpty())
		}

		for _, name := range []string{"ocm-placement-generator", "acm-placement"} {
			cm := &corev1.ConfigMap{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: name}, cm)).To(Succeed())
			Expect(cm.Data).To(Equal(map[string]string{
				"apiVersion":    "cluster.open-cluster-management.io/v1beta1",
				"kind":          "placementdecisions",
				"statusListKey": "decisions",
				"matchKey":      "clusterName",
			}))
		}
		roleName := argoNs + "-applicationset-controller-placement"
		role := &rbacv1.Role{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: roleName}, role)).To(Succeed())
		Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
			APIGroups: []string{"cluster.open-cluster-management.io"},
			Resources: []string{"placementdecisions"},
			Verbs:     []string{"get", "list", "watch"},
		}}))
		rb := &rbacv1.RoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: roleName}, rb)).To(Succeed())
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: roleName}))
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{
			Kind: "ServiceAccount", Name: "argocd-applicationset-controller", Namespace: argoNs,
		}}))
	})

	It("follows ManagedCluster labels and the Placement's decisions, and never touches a foreign Secret", func(ctx context.Context) {
		foreign := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: "hand-made", Labels: map[string]string{
				"argocd.argoproj.io/secret-type":               "cluster",
				"apps.open-cluster-management.io/acm-cluster":  "true",
				"apps.open-cluster-management.io/cluster-name": c2,
			}},
			StringData: map[string]string{"name": "elsewhere", "server": "https://elsewhere"},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())

		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		key := client.ObjectKeyFromObject(gc)
		expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)

		By("copying a changed label, a new label and dropping a removed one")
		mc := &clusterv1.ManagedCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: c1}, mc)).To(Succeed())
		mc.Labels = map[string]string{"env": "staging", "tier": "gold"}
		Expect(k8s.Update(ctx, mc)).To(Succeed())
		Eventually(func(g Gomega) map[string]string {
			return getSecret(ctx, secretKey(argoNs, c1))(g).Labels
		}, timeout, interval).Should(SatisfyAll(
			HaveKeyWithValue("env", "staging"),
			HaveKeyWithValue("tier", "gold"),
			Not(HaveKey("region")),
			HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"),
		))

		By("deleting the Secret of a cluster that left the decisions")
		c2Secret := getSecret(ctx, secretKey(argoNs, c2))(Default)
		setDecisions(ctx, argoNs, "all", c1)
		expectGone(ctx, c2Secret)
		// The phase was already successful: wait for the status that follows the deletion.
		Eventually(func(g Gomega) string {
			return getGitOpsCluster(ctx, key)(g).Status.Message
		}, timeout, interval).Should(Equal(addedMessage(argoNs, c1)))
		expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Eventually(func(g Gomega) []string {
			var names []string
			for n := range ourSecrets(ctx, g, argoNs) {
				names = append(names, n)
			}
			return names
		}, timeout, interval).Should(ConsistOf(c1))

		By("re-creating a cluster Secret someone deleted")
		s1 := getSecret(ctx, secretKey(argoNs, c1))(Default)
		Expect(k8s.Delete(ctx, s1)).To(Succeed())
		Eventually(func(g Gomega) string { return string(getSecret(ctx, secretKey(argoNs, c1))(g).UID) }, timeout, interval).
			ShouldNot(Equal(string(s1.UID)))

		By("leaving the foreign Secret exactly as it was")
		after := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(foreign.ResourceVersion))
	})

	It("reports a Secret of the same name it did not create as a conflict and leaves it alone", func(ctx context.Context) {
		squatter := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNs, Name: c2 + "-cluster-secret"},
			StringData: map[string]string{"name": c2, "server": "https://real.example.com", "config": "{}"},
		}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squatter), squatter)).To(Succeed())

		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		key := client.ObjectKeyFromObject(gc)
		got := expectPhase(ctx, key, appsv1beta1.PhaseFailed, appsv1beta1.ReasonClusterSecretConflict)
		Expect(got.Status.Message).To(ContainSubstring(c2 + "-cluster-secret"))
		expectCondition(got, appsv1beta1.ConditionClusterSecretsSynced, metav1.ConditionFalse, appsv1beta1.ReasonClusterSecretConflict)
		expectEvent(ctx, key, corev1.EventTypeWarning, appsv1beta1.ReasonClusterSecretConflict)
		getSecret(ctx, secretKey(argoNs, c1))(Default) // the other cluster is registered

		after := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squatter), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(squatter.ResourceVersion))

		By("recovering when the cluster leaves the Placement")
		setDecisions(ctx, argoNs, "all", c1)
		expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectEvent(ctx, key, corev1.EventTypeNormal, gitopscluster.EventReasonSynced)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squatter), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(squatter.ResourceVersion))
	})

	It("registers a decided cluster before its ManagedCluster exists and copies its labels once it does", func(ctx context.Context) {
		late := unique("cluster")
		setDecisions(ctx, argoNs, "all", c1, late)
		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		expectPhase(ctx, client.ObjectKeyFromObject(gc), appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Eventually(func(g Gomega) map[string]string {
			return getSecret(ctx, secretKey(argoNs, late))(g).Labels
		}, timeout, interval).Should(SatisfyAll(
			HaveKeyWithValue("apps.open-cluster-management.io/cluster-name", late),
			Not(HaveKey("env")),
		))

		createManagedCluster(ctx, late, map[string]string{"env": "late"})
		Eventually(func(g Gomega) map[string]string {
			return getSecret(ctx, secretKey(argoNs, late))(g).Labels
		}, timeout, interval).Should(HaveKeyWithValue("env", "late"))
	})

	It("treats an unset createBlankClusterSecrets as blank and says so", func(ctx context.Context) {
		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), nil)
		got := expectPhase(ctx, client.ObjectKeyFromObject(gc), appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectCondition(got, appsv1beta1.ConditionClusterSecretsSynced, metav1.ConditionTrue, appsv1beta1.ReasonBlankClusterSecretsImplied)
		s := getSecret(ctx, secretKey(argoNs, c1))(Default)
		Expect(s.Data).To(Equal(map[string][]byte{"name": []byte(c1), "server": []byte("https://" + c1 + "-control-plane")}))
	})

	It("writes nothing when nothing changed", func(ctx context.Context) {
		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		key := client.ObjectKeyFromObject(gc)
		expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Eventually(func(g Gomega) { g.Expect(ourSecrets(ctx, g, argoNs)).To(HaveLen(2)) }, timeout, interval).Should(Succeed())
		// Let the reconciles triggered by our own writes settle.
		Consistently(func() map[string]string { return resourceVersions(ctx, key, argoNs) }, "2s", interval).
			Should(Equal(resourceVersions(ctx, key, argoNs)))
		before := resourceVersions(ctx, key, argoNs)
		sent := writes.InNamespace(argoNs)
		count := reconcileCount()

		By("requeueing through an unrelated change to the PlacementDecision")
		pd := &clusterv1beta1.PlacementDecision{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: "all-decision-1"}, pd)).To(Succeed())
		pd.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, pd)).To(Succeed())
		Eventually(reconcileCount, timeout, interval).Should(BeNumerically(">", count))

		By("requeueing through an unrelated ManagedCluster change")
		mc := &clusterv1.ManagedCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: c1}, mc)).To(Succeed())
		mc.Annotations = map[string]string{"touched": "yes"}
		mc.Labels["env"] = "prod" // same value
		Expect(k8s.Update(ctx, mc)).To(Succeed())

		count = reconcileCount()
		setDecisions(ctx, argoNs, "all", c2, c1) // same set, other order
		Eventually(reconcileCount, timeout, interval).Should(BeNumerically(">", count))
		Consistently(func() map[string]string { return resourceVersions(ctx, key, argoNs) }, "2s", interval).
			Should(Equal(before))
		Expect(writes.InNamespace(argoNs)).To(Equal(sent), "API writes by the controller for unchanged input")
	})

	It("deletes its cluster Secrets in another namespace when the GitOpsCluster is deleted", func(ctx context.Context) {
		appNs := unique("apps")
		createNamespace(ctx, appNs)
		createPlacement(ctx, appNs, "all")
		setDecisions(ctx, appNs, "all", c1)
		gc := createGitOpsCluster(ctx, appNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		expectPhase(ctx, client.ObjectKeyFromObject(gc), appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		s := getSecret(ctx, secretKey(argoNs, c1))(Default)
		Expect(s.OwnerReferences).To(BeEmpty())
		Expect(s.Annotations).To(HaveKeyWithValue("owner.gitopscluster.apps.open-cluster-management.io/"+appNs+".gitops", appNs+"/gitops"))

		Expect(k8s.Delete(ctx, gc)).To(Succeed())
		expectGone(ctx, s)
		expectGone(ctx, gc)
		// The shared generator configuration stays for other GitOpsClusters.
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNs, Name: "acm-placement"}, &corev1.ConfigMap{})).To(Succeed())
	})

	It("moves its cluster Secrets when the Argo CD namespace changes", func(ctx context.Context) {
		gc := createGitOpsCluster(ctx, argoNs, "gitops", argoNs, placementRef("all"), ptr.To(true))
		key := client.ObjectKeyFromObject(gc)
		expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		old := getSecret(ctx, secretKey(argoNs, c1))(Default)

		newNs := unique("argocd-next")
		createNamespace(ctx, newNs)
		Eventually(func(g Gomega) {
			cur := getGitOpsCluster(ctx, key)(g)
			cur.Spec.ArgoServer.ArgoNamespace = newNs
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		got := expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		Expect(got.Status.Message).To(HaveSuffix("to Argo CD namespace " + newNs))
		expectGone(ctx, old)
		Eventually(func(g Gomega) { g.Expect(ourSecrets(ctx, g, newNs)).To(HaveLen(2)) }, timeout, interval).Should(Succeed())
		s := getSecret(ctx, secretKey(newNs, c1))(Default)
		Expect(s.OwnerReferences).To(BeEmpty()) // other namespace than the GitOpsCluster's
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: newNs, Name: "ocm-placement-generator"}, &corev1.ConfigMap{})).To(Succeed())
	})

	DescribeTable("bad input fails with a condition and a Warning Event, and recovers once fixed",
		func(ctx context.Context, ref func(argoNs string) *corev1.ObjectReference, badArgoNs bool,
			condition, reason string, fix func(ctx context.Context, gc *appsv1beta1.GitOpsCluster)) {
			target := argoNs
			if badArgoNs {
				target = unique("missing")
			}
			gc := createGitOpsCluster(ctx, argoNs, "gitops", target, ref(argoNs), ptr.To(true))
			key := client.ObjectKeyFromObject(gc)

			got := expectPhase(ctx, key, appsv1beta1.PhaseFailed, reason)
			Expect(got.Status.Message).NotTo(BeEmpty())
			Expect(got.Status.LastUpdateTime.IsZero()).To(BeFalse())
			expectCondition(got, condition, metav1.ConditionFalse, reason)
			expectCondition(got, appsv1beta1.ConditionClusterSecretsSynced, metav1.ConditionUnknown, appsv1beta1.ReasonWaitingForPrerequisites)
			expectEvent(ctx, key, corev1.EventTypeWarning, reason)
			Eventually(func(g Gomega) { g.Expect(ourSecrets(ctx, g, argoNs)).To(BeEmpty()) }).Should(Succeed())

			fix(ctx, got)
			got = expectPhase(ctx, key, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
			expectCondition(got, condition, metav1.ConditionTrue, map[string]string{
				appsv1beta1.ConditionPlacementResolved:  appsv1beta1.ReasonPlacementResolved,
				appsv1beta1.ConditionArgoNamespaceFound: appsv1beta1.ReasonArgoNamespaceFound,
			}[condition])
			expectEvent(ctx, key, corev1.EventTypeNormal, gitopscluster.EventReasonSynced)
			Eventually(func(g Gomega) { g.Expect(ourSecrets(ctx, g, got.Spec.ArgoServer.ArgoNamespace)).To(HaveLen(2)) }, timeout, interval).Should(Succeed())
		},
		Entry("wrong kind",
			func(string) *corev1.ObjectReference {
				return &corev1.ObjectReference{Kind: "PlacementRule", APIVersion: "apps.open-cluster-management.io/v1", Name: "all"}
			}, false,
			appsv1beta1.ConditionPlacementResolved, appsv1beta1.ReasonInvalidPlacementRef, fixRef),
		Entry("wrong API group",
			func(string) *corev1.ObjectReference {
				return &corev1.ObjectReference{Kind: "Placement", APIVersion: "apps.open-cluster-management.io/v1", Name: "all"}
			}, false,
			appsv1beta1.ConditionPlacementResolved, appsv1beta1.ReasonInvalidPlacementRef, fixRef),
		Entry("Placement in another namespace",
			func(string) *corev1.ObjectReference {
				return &corev1.ObjectReference{Kind: "Placement", Namespace: "default", Name: "all"}
			}, false,
			appsv1beta1.ConditionPlacementResolved, appsv1beta1.ReasonPlacementNamespaceMismatch, fixRef),
		Entry("missing Placement",
			func(string) *corev1.ObjectReference { return placementRef("later") }, false,
			appsv1beta1.ConditionPlacementResolved, appsv1beta1.ReasonPlacementNotFound,
			func(ctx context.Context, gc *appsv1beta1.GitOpsCluster) {
				setDecisions(ctx, gc.Namespace, "later", c1, c2) // decisions first: only the Placement's creation can wake it
				createPlacement(ctx, gc.Namespace, "later")
			}),
		Entry("missing Argo CD namespace",
			func(string) *corev1.ObjectReference { return placementRef("all") }, true,
			appsv1beta1.ConditionArgoNamespaceFound, appsv1beta1.ReasonArgoNamespaceNotFound,
			func(ctx context.Context, gc *appsv1beta1.GitOpsCluster) {
				createNamespace(ctx, gc.Spec.ArgoServer.ArgoNamespace)
			}),
	)
})

// fixRef points the GitOpsCluster at its namespace's Placement "all".
func fixRef(ctx context.Context, gc *appsv1beta1.GitOpsCluster) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := getGitOpsCluster(ctx, client.ObjectKeyFromObject(gc))(g)
		cur.Spec.PlacementRef = placementRef("all")
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}
