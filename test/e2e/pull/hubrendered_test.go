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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Hub-rendered delivery (docs/cmp.md) with the examples as they ship: the hub's
// Argo CD renders the guestbook through the chart's ocm-manifestwork plugin (our binary in
// its CMP sidecar) into one ManifestWork in hubRenderedCluster's namespace; OCM's work agent
// applies it on that cluster, which runs neither Argo CD nor the addon; the chart's health
// check turns the work's status into the hub Application's health.
//
// The scenario has its own git repository (the guestbook, no marker file: the chart's
// default plugin has no discover rule and renders the Applications that name it), its
// ManagedClusterSetBinding of the "global" set (when no other scenario made it), cluster label, Placement, GitOpsCluster and
// ApplicationSet, and removes them all at the end, so the other scenarios see the same hub
// whether they run before or after it.
const (
	hubRenderedAppSet        = "guestbook-hub-rendered"
	hubRenderedPlacement     = "guestbook-hub-rendered-placement"
	hubRenderedGitOpsCluster = "hub-rendered-importer"
	// hubRenderedClusterLabel is the label examples/hub-rendered/02-placement.yaml selects.
	hubRenderedClusterLabel = "delivery"
	hubRenderedClusterValue = "hub-rendered"
	// hubRenderedNS is the plugin env NAMESPACE of the example: where the guestbook's
	// objects, which name no namespace, go on the cluster.
	hubRenderedNS = "default"
	guestbookName = "guestbook-ui"
)

var _ = Describe("Hub-rendered delivery", Ordered, ContinueOnFailure, func() {
	var (
		gitRepo *fleet.LocalGitRepo
		head    string
		// app is the hub Application the ApplicationSet generates for the cluster, and the
		// name of its ManifestWork.
		app   = hubRenderedCluster + "-" + hubRenderedAppSet
		spoke client.Client
		// appSet is examples/hub-rendered/'s last step, applied by the first spec.
		appSet *unstructured.Unstructured
	)

	BeforeAll(func(ctx SpecContext) {
		spoke = theFleet.Cluster(hubRenderedCluster).APIServer.Client
		var err error
		gitRepo, err = fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "hub-rendered"))
		Expect(err).NotTo(HaveOccurred())
		head, err = gitRepo.Head()
		Expect(err).NotTo(HaveOccurred())

		By("labelling " + hubRenderedCluster + " " + hubRenderedClusterLabel + "=" + hubRenderedClusterValue)
		setClusterLabel(ctx, hubRenderedCluster, hubRenderedClusterLabel, hubRenderedClusterValue)
		DeferCleanup(func(ctx SpecContext) {
			setClusterLabel(ctx, hubRenderedCluster, hubRenderedClusterLabel, "")
		})

		appSet = applyStory(ctx, "hub-rendered")
		// Runs first (cleanups run last in, first out): the ApplicationSet goes before its
		// Placement, whatever failed on the way.
		DeferCleanup(deleteHubRenderedAppSet, app, NodeTimeout(3*time.Minute))

		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(decidedClusters(ctx, g, hubRenderedPlacement)).To(ConsistOf(hubRenderedCluster))
			// The clusterDecisionResource generator generates only for clusters Argo CD
			// knows, and reads the decisions through the generator ConfigMap.
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubRenderedCluster + "-cluster-secret"}, &corev1.Secret{})).To(Succeed())
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: fleet.GeneratorConfigMap}, &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("hub-rendered placement decided, cluster registered", time.Since(start).Round(100*time.Millisecond).String())
	}, NodeTimeout(5*time.Minute))

	It("generates the hub Application, which the hub's Argo CD syncs through the plugin", func(ctx SpecContext) {
		By("applying examples/hub-rendered/'s ApplicationSet (repoURL: the local repository)")
		set := appSet
		Expect(set.GetName()).To(Equal(hubRenderedAppSet))
		Expect(unstructured.SetNestedField(set.Object, gitRepo.URL, "spec", "template", "spec", "source", "repoURL")).To(Succeed())
		Expect(hub.Create(ctx, set)).To(Succeed())

		start := time.Now()
		Eventually(func(g Gomega) {
			a := getApp(ctx, g, hub, argoNS, app)
			// Not pulled: the hub's Argo CD reconciles it, the propagation controller does not.
			g.Expect(a.GetLabels()).NotTo(HaveKey(apps.LabelPullToOCMManagedCluster))
			g.Expect(a.GetAnnotations()).NotTo(HaveKey(apps.AnnotationSkipReconcile))
			g.Expect(nested(a, "spec", "source", "plugin", "name")).To(Equal("ocm-manifestwork"))
			g.Expect(nested(a, "spec", "destination", "server")).To(Equal("https://kubernetes.default.svc"))
			g.Expect(nested(a, "spec", "destination", "namespace")).To(Equal(hubRenderedCluster))
			dump := toYAML(a.Object["status"])
			g.Expect(nested(a, "status", "sync", "status")).To(Equal("Synced"), dump)
			g.Expect(nested(a, "status", "sync", "revision")).To(Equal(head), dump)
			g.Expect(nested(a, "status", "operationState", "phase")).To(Equal("Succeeded"), dump)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("hub-rendered Application synced on the hub", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("delivers the guestbook as one ManifestWork named after the Application in the cluster's namespace", func(ctx SpecContext) {
		list := &workv1.ManifestWorkList{}
		Expect(hub.List(ctx, list, client.InNamespace(hubRenderedCluster))).To(Succeed())
		Expect(list.Items).To(HaveLen(1), "ManifestWorks in %s", hubRenderedCluster)
		mw := list.Items[0]
		Expect(mw.Name).To(Equal(app))
		Expect(mw.Labels).To(HaveKeyWithValue(apps.LabelHubRendered, "true"))
		Expect(mw.Labels).NotTo(HaveKey(apps.LabelPullToOCMManagedCluster))
		Expect(mw.Annotations).To(HaveKeyWithValue(apps.AnnotationHubApplicationName, app))
		Expect(mw.Annotations).To(HaveKeyWithValue(apps.AnnotationHubApplicationNamespace, argoNS))
		Expect(mw.Annotations).To(HaveKeyWithValue(apps.AnnotationSourceRevision, head))

		type manifestID struct{ APIVersion, Kind, Namespace, Name string }
		var manifests []manifestID
		for _, m := range mw.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			Expect(json.Unmarshal(m.Raw, &u.Object)).To(Succeed())
			manifests = append(manifests, manifestID{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()})
		}
		// In apply order: the ConfigMap before the Deployment.
		Expect(manifests).To(Equal([]manifestID{
			{"v1", "ConfigMap", hubRenderedNS, guestbookName},
			{"apps/v1", "Deployment", hubRenderedNS, guestbookName},
		}))
		Expect(mw.Spec.ManifestConfigs).To(HaveLen(2))
		for _, c := range mw.Spec.ManifestConfigs {
			Expect(c.FeedbackRules).To(ConsistOf(HaveField("Type", workv1.WellKnownStatusType)))
		}
	})

	It("shows the ManifestWork in the hub Application's resource tree, as the hub's argocd-server serves it to the UI", func(ctx SpecContext) {
		// The hub's application-controller writes the tree into the hub's Argo CD Redis,
		// where argocd-server reads it.
		Eventually(func(g Gomega) {
			tree, err := pf.HubServer.ResourceTree(ctx, argoNS, app)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tree.Nodes).To(ContainElement(And(
				HaveField("Group", workv1.GroupName), HaveField("Kind", "ManifestWork"),
				HaveField("Namespace", hubRenderedCluster), HaveField("Name", app),
			)), toYAML(tree))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("has OCM's work agent apply the guestbook on the cluster, which runs no Argo CD and no addon", func(ctx SpecContext) {
		Expect(pf.ArgoCD).NotTo(HaveKey(hubRenderedCluster))
		err := hub.Get(ctx, client.ObjectKey{Namespace: hubRenderedCluster, Name: fleet.PullAddonName}, &addonv1alpha1.ManagedClusterAddOn{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManagedClusterAddOn %s/%s: %v", hubRenderedCluster, fleet.PullAddonName, err)

		start := time.Now()
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: hubRenderedNS, Name: guestbookName}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("title", "Guestbook from the hub"))
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: hubRenderedNS, Name: guestbookName}, &appsv1.Deployment{})).To(Succeed())

			mw := &workv1.ManifestWork{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: hubRenderedCluster, Name: app}, mw)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mw.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "%v", mw.Status.Conditions)
			g.Expect(meta.IsStatusConditionTrue(mw.Status.Conditions, workv1.WorkAvailable)).To(BeTrue(), "%v", mw.Status.Conditions)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("guestbook applied on "+hubRenderedCluster, time.Since(start).Round(100*time.Millisecond).String())

		applications := &unstructured.UnstructuredList{}
		applications.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
		Expect(spoke.List(ctx, applications)).To(Succeed())
		Expect(applications.Items).To(BeEmpty(), "Applications on %s", hubRenderedCluster)
	})

	// No deployment controller and no kubelet run: the Deployment's status stays empty, the
	// work reports no replicas, and the health check has no rollout to wait for. Write the
	// status the deployment controller writes while its pod is not ready yet.
	It("shows the hub Application Progressing from the work's status while the Deployment rolls out", func(ctx SpecContext) {
		patchGuestbookStatus(ctx, spoke, appsv1.DeploymentStatus{
			Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"},
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
			},
		})
		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(deploymentFeedback(ctx, g, app)).To(HaveKeyWithValue("Replicas", int64(1)))
			expectHubRenderedApp(ctx, g, app, head, "Progressing")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("Progressing on the hub", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("turns the hub Application Healthy when the rollout completes on the cluster", func(ctx SpecContext) {
		patchGuestbookStatus(ctx, spoke, appsv1.DeploymentStatus{
			Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			},
		})
		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(deploymentFeedback(ctx, g, app)).To(HaveKeyWithValue("AvailableReplicas", int64(1)))
			expectHubRenderedApp(ctx, g, app, head, "Healthy")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("Healthy on the hub after the rollout", time.Since(start).Round(100*time.Millisecond).String())
	})

	// The hub aggregation of hub-rendered Applications (pkg/hub/aggregation, the
	// report section of docs/cmp.md).
	It("shows the cluster in the ApplicationSet's report", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubRenderedAppSet}, r)).To(Succeed())
			dump := toYAML(r)
			g.Expect(r.Statuses.ClusterConditions).To(ConsistOf(And(
				HaveField("Cluster", hubRenderedCluster),
				HaveField("App", strings.Join([]string{argoNS, app, hubRenderedCluster, app}, "/")),
				HaveField("Delivery", appsv1alpha1.DeliveryHubRendered),
				HaveField("SyncStatus", "Synced"),
				HaveField("HealthStatus", "Healthy"),
				HaveField("SyncRevision", head),
			)), dump)
			g.Expect(r.Statuses.Resources).To(ConsistOf(
				appsv1alpha1.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Name: guestbookName, Namespace: hubRenderedNS},
				appsv1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: guestbookName, Namespace: hubRenderedNS},
			), dump)
			g.Expect(r.Statuses.Summary).To(HaveField("Healthy", "1"), dump)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("removes the hub Application, the ManifestWork and the guestbook on the cluster with the ApplicationSet", func(ctx SpecContext) {
		start := time.Now()
		deleteHubRenderedAppSet(ctx, app)
		AddReportEntry("hub-rendered ApplicationSet deleted, cluster clean", time.Since(start).Round(100*time.Millisecond).String())
	}, NodeTimeout(3*time.Minute))
})

// deleteHubRenderedAppSet deletes the hub-rendered ApplicationSet and waits until it, its
// Application app, the ManifestWork and the guestbook on the cluster are gone: the
// Application's resources finalizer (which the ApplicationSet adds) makes the hub's Argo
// CD delete the ManifestWork, and the work agent then deletes what it applied.
func deleteHubRenderedAppSet(ctx SpecContext, app string) {
	GinkgoHelper()
	set := &unstructured.Unstructured{}
	set.SetGroupVersionKind(appSetGVK)
	set.SetNamespace(argoNS)
	set.SetName(hubRenderedAppSet)
	Expect(client.IgnoreNotFound(hub.Delete(ctx, set, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
	spoke := theFleet.Cluster(hubRenderedCluster).APIServer.Client
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appSetGVK)
		err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubRenderedAppSet}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationSet %s: %v", hubRenderedAppSet, err)
		u.SetGroupVersionKind(applicationGVK)
		err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: app}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s: %v", app, err)
		err = hub.Get(ctx, client.ObjectKey{Namespace: hubRenderedCluster, Name: app}, &workv1.ManifestWork{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManifestWork %s/%s: %v", hubRenderedCluster, app, err)
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
			err = spoke.Get(ctx, client.ObjectKey{Namespace: hubRenderedNS, Name: guestbookName}, obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s/%s on %s: %v", obj, hubRenderedNS, guestbookName, hubRenderedCluster, err)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// expectHubRenderedApp checks the hub Application app: synced at head with health, its
// one resource the Synced ManifestWork in the cluster's namespace.
func expectHubRenderedApp(ctx SpecContext, g Gomega, app, head, health string) {
	a := getApp(ctx, g, hub, argoNS, app)
	dump := toYAML(a.Object["status"])
	g.Expect(nested(a, "status", "sync", "status")).To(Equal("Synced"), dump)
	g.Expect(nested(a, "status", "sync", "revision")).To(Equal(head), dump)
	g.Expect(nested(a, "status", "health", "status")).To(Equal(health), dump)
	resources, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
	g.Expect(resources).To(ConsistOf(And(
		HaveKeyWithValue("group", "work.open-cluster-management.io"), HaveKeyWithValue("kind", "ManifestWork"),
		HaveKeyWithValue("namespace", hubRenderedCluster), HaveKeyWithValue("name", app),
		HaveKeyWithValue("status", "Synced"),
	)), dump)
}

// deploymentFeedback is the well-known status the work agent reports for the guestbook's
// Deployment in ManifestWork app.
func deploymentFeedback(ctx SpecContext, g Gomega, app string) map[string]int64 {
	mw := &workv1.ManifestWork{}
	g.ExpectWithOffset(1, hub.Get(ctx, client.ObjectKey{Namespace: hubRenderedCluster, Name: app}, mw)).To(Succeed())
	values := map[string]int64{}
	for _, m := range mw.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind != "Deployment" {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.Type == workv1.Integer && v.Value.Integer != nil {
				values[v.Name] = *v.Value.Integer
			}
		}
	}
	return values
}

// patchGuestbookStatus writes status to the guestbook's Deployment on the hub-rendered
// cluster, as the deployment controller would.
func patchGuestbookStatus(ctx SpecContext, spoke client.Client, status appsv1.DeploymentStatus) {
	GinkgoHelper()
	dep := &appsv1.Deployment{}
	Expect(spoke.Get(ctx, client.ObjectKey{Namespace: hubRenderedNS, Name: guestbookName}, dep)).To(Succeed())
	patch := client.MergeFrom(dep.DeepCopy())
	status.ObservedGeneration = dep.Generation
	now := metav1.Now()
	for i := range status.Conditions {
		status.Conditions[i].LastUpdateTime, status.Conditions[i].LastTransitionTime = now, now
	}
	dep.Status = status
	Expect(spoke.Status().Patch(ctx, dep, patch)).To(Succeed())
}

// setClusterLabel sets label key to value on ManagedCluster cluster; an empty value
// removes it.
func setClusterLabel(ctx SpecContext, cluster, key, value string) {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{}
	Expect(hub.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
	patch := client.MergeFrom(mc.DeepCopy())
	if value == "" {
		delete(mc.Labels, key)
	} else {
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[key] = value
	}
	Expect(hub.Patch(ctx, mc, patch)).To(Succeed())
}
