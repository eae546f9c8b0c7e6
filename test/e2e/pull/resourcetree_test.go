//go:build e2e

package pull_test

import (
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// What Argo CD 3 knows reaches the hub: with per-resource health kept out of the
// Application (Argo CD 3's default, which the fleet's Argo CD keeps), the agent reads it
// from the resource tree in the cluster's Redis (redis-server with a password, the agent
// reading it from the argocd-redis Secret). One multi-source Application on treeCluster:
// a Deployment from one repository, a ConfigMap from another. No kubelet and no
// deployment controller run in the fleet, so the test writes what they would: the
// Deployment's status past its progress deadline, and a ReplicaSet of it.
const (
	treeCluster    = "cluster2"
	treeAppSet     = "resource-tree"
	treeNS         = "resource-tree-e2e"
	treeDeployment = "tree-web"
	treeReplicaSet = "tree-web-5d4f"
)

const treeDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + treeDeployment + `
spec:
  replicas: 1
  progressDeadlineSeconds: 30
  selector:
    matchLabels:
      app: ` + treeDeployment + `
  template:
    metadata:
      labels:
        app: ` + treeDeployment + `
    spec:
      containers:
      - name: web
        image: registry.invalid/never-pulled:1
`

var _ = Describe("Scenario 19: per-resource health from Argo CD's resource tree and multi-source revisions", Ordered, func() {
	var webHead, configHead string
	app := treeCluster + "-" + treeAppSet

	BeforeAll(func(ctx SpecContext) {
		web, err := fleet.NewLocalGitRepo(filepath.Join(fleetDir, "git", "tree-web"), map[string]string{"web/deployment.yaml": treeDeploymentYAML})
		Expect(err).NotTo(HaveOccurred())
		config, err := fleet.NewLocalGitRepo(filepath.Join(fleetDir, "git", "tree-config"), map[string]string{"config/configmap.yaml": goodManifestYAML})
		Expect(err).NotTo(HaveOccurred())
		webHead, err = web.Head()
		Expect(err).NotTo(HaveOccurred())
		configHead, err = config.Head()
		Expect(err).NotTo(HaveOccurred())
		Expect(webHead).NotTo(Equal(configHead))
		createTreeAppSet(ctx, web.URL, config.URL)
	})

	It("names the Deployment Argo CD computes Degraded, with its message and the children behind it, in the reports", func(ctx SpecContext) {
		spoke := theFleet.Cluster(treeCluster).APIServer.Client
		dep := &appsv1.Deployment{}
		Eventually(func(g Gomega) {
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: treeNS, Name: treeDeployment}, dep)).To(Succeed())
			spokeApp := getApp(ctx, g, spoke, argoNS, app)
			// Argo CD 3's default: health in the tree, not in the Application.
			g.Expect(nested(spokeApp, "status", "resourceHealthSource")).To(Equal("appTree"))
			g.Expect(nested(spokeApp, "status", "sync", "status")).To(Equal("Synced"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("writing what the deployment controller would: a ReplicaSet of the Deployment, and the Deployment past its progress deadline")
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: treeReplicaSet, Namespace: treeNS, Labels: map[string]string{"app": treeDeployment},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: dep.Spec.Selector, Template: dep.Spec.Template},
		}
		Expect(spoke.Create(ctx, rs)).To(Succeed())
		patch := client.MergeFrom(dep.DeepCopy())
		now := metav1.Now()
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "` + treeReplicaSet + `" has timed out progressing.`, LastUpdateTime: now, LastTransitionTime: now,
			}},
		}
		Expect(spoke.Status().Patch(ctx, dep, patch)).To(Succeed())

		degraded := `Deployment "` + treeDeployment + `" exceeded its progress deadline`
		Eventually(func(g Gomega) {
			asr := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: argoNS + "." + app}, asr)).To(Succeed())
			dump := toYAML(asr)
			g.Expect(asr.Status.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceRedisTree), dump)
			g.Expect(asr.Status.Resources).To(ContainElement(And(
				HaveField("Kind", "Deployment"), HaveField("Name", treeDeployment),
				HaveField("Health", HaveValue(And(HaveField("Status", appsv1alpha1.HealthStatusDegraded), HaveField("Message", degraded)))),
			)), dump)
			g.Expect(asr.Status.Resources).To(ContainElement(And(
				HaveField("Kind", "ConfigMap"), HaveField("Health", BeNil()),
			)), dump)
			g.Expect(asr.Status.ResourceTree).NotTo(BeNil(), dump)
			g.Expect(asr.Status.ResourceTree.NotHealthy).To(ContainElement(And(
				HaveField("Kind", "ReplicaSet"), HaveField("Name", treeReplicaSet), HaveField("Parent", "Deployment/"+treeDeployment),
				HaveField("Health.Status", appsv1alpha1.HealthStatusProgressing),
			)), dump)

			e := clusterEntry(g, treeReport(ctx, g), treeCluster)
			dump = toYAML(e)
			g.Expect(e.HealthStatus).To(Equal("Degraded"), dump)
			g.Expect(e.FailingResources).To(ContainElement(And(
				HaveField("Kind", "Deployment"), HaveField("Name", treeDeployment), HaveField("Namespace", treeNS),
				HaveField("HealthStatus", "Degraded"), HaveField("Message", degraded),
			)), dump)
			g.Expect(e.NotHealthyChildren).To(ContainElement(And(
				HaveField("Kind", "ReplicaSet"), HaveField("Name", treeReplicaSet), HaveField("Parent", "Deployment/"+treeDeployment),
			)), dump)
			g.Expect(e.Stale).To(BeFalse(), dump)

			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
			g.Expect(meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionResourceTreeReadable)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", apps.ReasonResourceTreeRead)))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	// The hub's Argo CD UI and CLI: the tree from the hub's argocd-server, stale while the
	// agent is away (hubtree_test.go).
	hubResourceTreeSpecs(app)

	It("shows both revisions of the multi-source Application on the hub Application and in the report entry", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			hubApp := getApp(ctx, g, hub, argoNS, app)
			revisions, _, _ := unstructured.NestedStringSlice(hubApp.Object, "status", "sync", "revisions")
			g.Expect(revisions).To(Equal([]string{webHead, configHead}), toYAML(hubApp.Object["status"]))
			e := clusterEntry(g, treeReport(ctx, g), treeCluster)
			g.Expect(e.SyncRevisions).To(Equal([]string{webHead, configHead}), toYAML(e))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("says on the ManagedClusterAddOn when the agent cannot reach Redis, and still reports everything else", func(ctx SpecContext) {
		ports, err := framework.FreePorts(1)
		Expect(err).NotTo(HaveOccurred())
		closed := framework.LoopbackAddress(ports[0])
		redis := pf.ArgoCD[treeCluster].RedisAddr
		DeferCleanup(func(ctx SpecContext) {
			Expect(pull.StopAgent(treeCluster)).To(Succeed())
			pull.SetAgentArgs(treeCluster, "--redis-address="+redis)
			Expect(pull.StartAgent(ctx, treeCluster, "")).To(Succeed())
			Eventually(func(g Gomega) {
				mca := &addonv1alpha1.ManagedClusterAddOn{}
				g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
				g.Expect(meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionResourceTreeReadable)).To(HaveField("Status", metav1.ConditionTrue))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		}, NodeTimeout(4*time.Minute))

		By("restarting the agent of " + treeCluster + " with --redis-address at a closed port")
		Expect(pull.StopAgent(treeCluster)).To(Succeed())
		pull.SetAgentArgs(treeCluster, "--redis-address="+closed)
		restarted := time.Now().Truncate(time.Second)
		Expect(pull.StartAgent(ctx, treeCluster, "")).To(Succeed())

		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
			g.Expect(meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionResourceTreeReadable)).To(And(
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", apps.ReasonResourceTreeUnreadable),
				HaveField("Message", And(ContainSubstring(closed), ContainSubstring("connection refused"))),
			), toYAML(mca.Status.Conditions))

			// Written by the restarted agent, without the tree, everything else there.
			asr := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: argoNS + "." + app}, asr)).To(Succeed())
			dump := toYAML(asr)
			g.Expect(asr.Status.ObservedAt.Time).To(BeTemporally(">=", restarted), dump)
			g.Expect(asr.Status.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceAppTree), dump)
			g.Expect(asr.Status.ResourceTree).To(BeNil(), dump)
			g.Expect(asr.Status.Sync.Status).To(Equal(appsv1alpha1.SyncStatusSynced), dump)
			g.Expect(asr.Status.Sync.Revisions).To(Equal([]string{webHead, configHead}), dump)
			g.Expect(asr.Status.Health.Status).To(Equal(appsv1alpha1.HealthStatusDegraded), dump)
			g.Expect(asr.Status.Resources).To(ContainElement(And(HaveField("Kind", "Deployment"), HaveField("Health", BeNil()))), dump)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// treeReport is the MulticlusterApplicationSetReport of the scenario's ApplicationSet.
func treeReport(ctx SpecContext, g Gomega) *appsv1alpha1.MulticlusterApplicationSetReport {
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	g.ExpectWithOffset(1, hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: treeAppSet}, r)).To(Succeed())
	return r
}

// createTreeAppSet creates the scenario's ApplicationSet (one multi-source Application
// on treeCluster: webRepo's web, configRepo's config) and registers its clean-up.
func createTreeAppSet(ctx SpecContext, webRepo, configRepo string) {
	GinkgoHelper()
	set := readExample(fleet.PullApplicationSetExample)
	set.SetName(treeAppSet)
	Expect(unstructured.SetNestedField(set.Object, []any{map[string]any{"list": map[string]any{
		"elements": []any{map[string]any{"name": treeCluster}},
	}}}, "spec", "generators")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, "{{name}}-"+treeAppSet, "spec", "template", "metadata", "name")).To(Succeed())
	unstructured.RemoveNestedField(set.Object, "spec", "template", "spec", "source")
	Expect(unstructured.SetNestedSlice(set.Object, []any{
		map[string]any{"repoURL": webRepo, "targetRevision": "HEAD", "path": "web"},
		map[string]any{"repoURL": configRepo, "targetRevision": "HEAD", "path": "config"},
	}, "spec", "template", "spec", "sources")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, treeNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
	Expect(hub.Create(ctx, set)).To(Succeed())

	DeferCleanup(func(ctx SpecContext) {
		del := &unstructured.Unstructured{}
		del.SetGroupVersionKind(appSetGVK)
		del.SetNamespace(argoNS)
		del.SetName(treeAppSet)
		Expect(client.IgnoreNotFound(hub.Delete(ctx, del, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
		name := treeCluster + "-" + treeAppSet
		spoke := theFleet.Cluster(treeCluster).APIServer.Client
		Eventually(func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(applicationGVK)
			err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, u)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub Application %s: %v", name, err)
			err = spoke.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, u)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s on %s: %v", name, treeCluster, err)
			err = hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: argoNS + "." + name}, &appsv1alpha1.ApplicationStatusReport{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationStatusReport of %s: %v", name, err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(client.IgnoreNotFound(spoke.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: treeNS}}))).To(Succeed())
	}, NodeTimeout(3*time.Minute))
}
