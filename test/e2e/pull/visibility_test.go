//go:build e2e

package pull_test

import (
	"path/filepath"
	"strconv"
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
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Every reason a pulled Application does not run shows on the hub: the RHACM pull-model
// article's ApplicationSet delivers to openshift-gitops, a namespace the clusters do not
// have (a), then, once it exists, one the agent does not watch (b); and what an agent
// reported goes from the hub Application when its addon is disabled (c). Everything
// happens on visCluster and is gone (or enabled again) at the end, so the other scenarios
// see the same fleet whether they run before or after these.
const (
	visCluster  = "cluster1"
	visAppSet   = "visibility"
	visSpokeNS  = "openshift-gitops" // the article's ocm-managed-cluster-app-namespace
	visDestNS   = "visibility-e2e"
	visStandard = "visibility-disabled"
)

var _ = Describe("Scenario 8: every reason an Application does not run is visible on the hub", Ordered, func() {
	var repo *fleet.LocalGitRepo

	BeforeAll(func(ctx SpecContext) {
		var err error
		repo, err = fleet.NewLocalGitRepo(filepath.Join(fleetDir, "git", "visibility"), map[string]string{
			"good/configmap.yaml":  goodManifestYAML,
			"mixed/configmap.yaml": goodManifestYAML,
			"mixed/bad.yaml":       badManifestYAML,
		})
		Expect(err).NotTo(HaveOccurred())
		spoke := theFleet.Cluster(visCluster).APIServer.Client
		err = spoke.Get(ctx, client.ObjectKey{Name: visSpokeNS}, &corev1.Namespace{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s on %s: %v", visSpokeNS, visCluster, err)
		// Clean-ups run last first: the ApplicationSet and all it made go, then the
		// namespace (b) creates.
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(spoke.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: visSpokeNS}}))).To(Succeed())
		})
		createVisibilityAppSet(ctx, repo.URL)
	})

	It("(a) says the ManifestWork is not applied because the cluster has no namespace "+visSpokeNS+", on the hub Application, as an Event and in the report", func(ctx SpecContext) {
		app := visCluster + "-" + visAppSet

		start := time.Now()
		Eventually(func(g Gomega) {
			hubApp := getApp(ctx, g, hub, argoNS, app)
			dump := toYAML(hubApp.Object["status"])
			g.Expect(hubConditions(hubApp)).To(ContainElement(And(
				HaveKeyWithValue("type", pullmodel.ConditionClusterApplyError),
				HaveKeyWithValue("message", And(HavePrefix(pullmodel.HubConditionPrefix), ContainSubstring(`namespaces "`+visSpokeNS+`" not found`))),
			)), dump)
			g.Expect(warningEvents(ctx, g, app, pullmodel.ConditionClusterApplyError)).To(ContainElement(ContainSubstring(`namespaces "` + visSpokeNS + `" not found`)))

			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: visAppSet}, r)).To(Succeed())
			g.Expect(r.Statuses.ClusterConditions).To(HaveLen(1))
			g.Expect(r.Statuses.ClusterConditions[0].Conditions).To(ContainElement(And(
				HaveField("Type", pullmodel.ConditionClusterApplyError),
				HaveField("Message", ContainSubstring(`namespaces "`+visSpokeNS+`" not found`)),
			)), toYAML(r))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("ClusterApplyError on the hub and in the report", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("(b) once "+visSpokeNS+" exists, says the agent has not reported the Application, where it went and what the agent watches", func(ctx SpecContext) {
		app := visCluster + "-" + visAppSet
		spoke := theFleet.Cluster(visCluster).APIServer.Client
		By("creating namespace " + visSpokeNS + " on " + visCluster + ": the work agent applies the Application there")
		Expect(spoke.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: visSpokeNS}})).To(Succeed())

		start := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: visSpokeNS, Name: app}, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			}})).To(Succeed())
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: visCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
			watched := meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionApplicationsWatched)
			g.Expect(watched).NotTo(BeNil(), "the agent's %s condition", apps.ConditionApplicationsWatched)

			hubApp := getApp(ctx, g, hub, argoNS, app)
			dump := toYAML(hubApp.Object["status"])
			conditions := hubConditions(hubApp)
			g.Expect(conditions).NotTo(ContainElement(HaveKeyWithValue("type", pullmodel.ConditionClusterApplyError)), dump)
			g.Expect(conditions).To(ContainElement(And(
				HaveKeyWithValue("type", pullmodel.ConditionNotReported),
				HaveKeyWithValue("message", And(
					ContainSubstring("cluster "+visCluster+" as "+visSpokeNS+"/"+app),
					ContainSubstring(strconv.Quote(watched.Message)),
					ContainSubstring("namespace "+visSpokeNS),
				)),
			)), dump)
			g.Expect(warningEvents(ctx, g, app, pullmodel.ConditionNotReported)).To(ContainElement(ContainSubstring(visSpokeNS)))

			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: visAppSet}, r)).To(Succeed())
			g.Expect(r.Statuses.ClusterConditions).To(HaveLen(1))
			g.Expect(r.Statuses.ClusterConditions[0].Conditions).To(ContainElement(HaveField("Type", pullmodel.ConditionNotReported)), toYAML(r))
			g.Expect(r.Statuses.ClusterConditions[0].Conditions).NotTo(ContainElement(HaveField("Type", pullmodel.ConditionClusterApplyError)), toYAML(r))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("NotReportedError on the hub and in the report", time.Since(start).Round(100*time.Millisecond).String())
	})

	It("(c) clears the agent's resources and conditions from the hub Application when the addon is disabled, and has them back when it is enabled again", func(ctx SpecContext) {
		spoke := theFleet.Cluster(visCluster).APIServer.Client
		createDisabledScenarioApp(ctx, repo.URL)
		Eventually(func(g Gomega) {
			hubApp := getApp(ctx, g, hub, argoNS, visStandard)
			dump := toYAML(hubApp.Object["status"])
			resources, _, _ := unstructured.NestedSlice(hubApp.Object, "status", "resources")
			g.Expect(resources).To(ContainElement(HaveKeyWithValue("name", badCMName)), dump)
			g.Expect(spokeConditions(hubApp)).To(ContainElement(HaveKeyWithValue("type", "SyncError")), dump)
			g.Expect(nested(hubApp, "status", "operationState", "message")).To(ContainSubstring(badCMName), dump)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("disabling the addon on " + visCluster + ", as `clusteradm addon disable --names argocd-pull --clusters " + visCluster + "` does")
		Expect(hub.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: visCluster, Name: fleet.PullAddonName},
		})).To(Succeed())
		DeferCleanup(enableAddonAgain, visCluster, NodeTimeout(5*time.Minute))
		Eventually(func(g Gomega) {
			err := spoke.Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAgentName}, &appsv1.Deployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the agent's Deployment: %v", err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(pull.StopAgent(visCluster)).To(Succeed())

		start := time.Now()
		Eventually(func(g Gomega) {
			list := &appsv1alpha1.ApplicationStatusReportList{}
			g.Expect(hub.List(ctx, list, client.InNamespace(visCluster))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "the cluster's reports")

			hubApp := getApp(ctx, g, hub, argoNS, visStandard)
			dump := toYAML(hubApp.Object["status"])
			resources, _, _ := unstructured.NestedSlice(hubApp.Object, "status", "resources")
			g.Expect(resources).To(BeEmpty(), dump)
			g.Expect(spokeConditions(hubApp)).To(BeEmpty(), dump)
			g.Expect(nested(hubApp, "status", "health", "message")).To(BeEmpty(), dump)
			g.Expect(nested(hubApp, "status", "operationState", "message")).To(BeEmpty(), dump)
			// The work agent still reads the cluster's Application: sync comes from it.
			g.Expect(nested(hubApp, "status", "sync", "status")).To(Equal("OutOfSync"), dump)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("the agent's details gone from the hub Application", time.Since(start).Round(100*time.Millisecond).String())

		By("enabling the addon again: the agent reports, and the details are back")
		enableAddonAgain(ctx, visCluster)
		Eventually(func(g Gomega) {
			hubApp := getApp(ctx, g, hub, argoNS, visStandard)
			resources, _, _ := unstructured.NestedSlice(hubApp.Object, "status", "resources")
			g.Expect(resources).To(ContainElement(HaveKeyWithValue("name", badCMName)), toYAML(hubApp.Object["status"]))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// createVisibilityAppSet creates the article's ApplicationSet: one Application on
// visCluster (a list generator) delivered to visSpokeNS, and registers its clean-up
// (called from BeforeAll, it runs after the container's last spec).
// preserveResourcesOnDeletion keeps the resources finalizer off the Application, which
// no Argo CD on the cluster would ever remove in visSpokeNS.
func createVisibilityAppSet(ctx SpecContext, repoURL string) {
	GinkgoHelper()
	set := readExample(fleet.PullApplicationSetExample)
	set.SetName(visAppSet)
	Expect(unstructured.SetNestedField(set.Object, []any{map[string]any{"list": map[string]any{
		"elements": []any{map[string]any{"name": visCluster}},
	}}}, "spec", "generators")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, "{{name}}-"+visAppSet, "spec", "template", "metadata", "name")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, visSpokeNS, "spec", "template", "metadata", "annotations",
		apps.AnnotationOCMManagedClusterAppNamespace)).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, "good", "spec", "template", "spec", "source", "path")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, visDestNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
	Expect(unstructured.SetNestedField(set.Object, true, "spec", "syncPolicy", "preserveResourcesOnDeletion")).To(Succeed())
	Expect(hub.Create(ctx, set)).To(Succeed())

	DeferCleanup(func(ctx SpecContext) {
		app := visCluster + "-" + visAppSet
		del := &unstructured.Unstructured{}
		del.SetGroupVersionKind(appSetGVK)
		del.SetNamespace(argoNS)
		del.SetName(visAppSet)
		Expect(client.IgnoreNotFound(hub.Delete(ctx, del, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
		expectPulledAppGone(ctx, app, visSpokeNS)
	}, NodeTimeout(3*time.Minute))
}

// createDisabledScenarioApp creates a standalone pulled Application on visCluster whose
// sync fails on one of its two ConfigMaps, so its agent reports resources, a SyncError
// condition and an operation message; and registers its clean-up.
func createDisabledScenarioApp(ctx SpecContext, repoURL string) {
	GinkgoHelper()
	app := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name": visStandard, "namespace": argoNS,
			"labels": map[string]any{apps.LabelPullToOCMManagedCluster: "true"},
			"annotations": map[string]any{
				apps.AnnotationSkipReconcile:                 "true",
				apps.AnnotationOCMManagedCluster:             visCluster,
				apps.AnnotationOCMManagedClusterAppNamespace: argoNS,
			},
		},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": repoURL, "targetRevision": "HEAD", "path": "mixed"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": visDestNS},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{},
				"syncOptions": []any{"CreateNamespace=true"},
				// One quick retry, and the operation ends Failed (as in the errors scenarios).
				"retry": map[string]any{"limit": int64(1), "backoff": map[string]any{"duration": "1s", "factor": int64(1), "maxDuration": "1s"}},
			},
		},
	}}
	app.SetGroupVersionKind(applicationGVK)
	Expect(hub.Create(ctx, app)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hub.Delete(ctx, app))).To(Succeed())
		expectPulledAppGone(ctx, visStandard, argoNS)
	}, NodeTimeout(3*time.Minute))
}

// expectPulledAppGone waits until the hub Application name, its ManifestWork and report
// and the Application in spokeNS on visCluster are gone. An Application no Argo CD
// manages there keeps a finalizer forever: it is removed.
func expectPulledAppGone(ctx SpecContext, name, spokeNS string) {
	GinkgoHelper()
	spoke := theFleet.Cluster(visCluster).APIServer.Client
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(applicationGVK)
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: spokeNS, Name: name}, u); err == nil && spokeNS != argoNS && len(u.GetFinalizers()) > 0 {
			patch := client.MergeFrom(u.DeepCopy())
			u.SetFinalizers(nil)
			g.Expect(client.IgnoreNotFound(spoke.Patch(ctx, u, patch))).To(Succeed())
		}
		err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub Application %s: %v", name, err)
		works := &workv1.ManifestWorkList{}
		g.Expect(hub.List(ctx, works, client.InNamespace(visCluster))).To(Succeed())
		for _, mw := range works.Items {
			g.Expect(mw.Annotations).NotTo(HaveKeyWithValue(apps.AnnotationHubApplicationName, name), mw.Name)
		}
		err = spoke.Get(ctx, client.ObjectKey{Namespace: spokeNS, Name: name}, u)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Application %s/%s on %s: %v", spokeNS, name, visCluster, err)
		err = hub.Get(ctx, client.ObjectKey{Namespace: visCluster, Name: spokeNS + "." + name}, &appsv1alpha1.ApplicationStatusReport{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ApplicationStatusReport of %s: %v", name, err)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// enableAddonAgain enables the addon on cluster if it is not, starts its agent and waits
// until the addon is available again.
func enableAddonAgain(ctx SpecContext, cluster string) {
	GinkgoHelper()
	err := hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: fleet.PullAddonName}, &addonv1alpha1.ManagedClusterAddOn{})
	if apierrors.IsNotFound(err) {
		Expect(pull.EnableAddon(ctx, cluster, "")).To(Succeed())
		Expect(pull.StartAgent(ctx, cluster, "")).To(Succeed())
	}
	Eventually(func(g Gomega) {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).To(BeTrue(), "%v", mca.Status.Conditions)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// hubConditions are the hub Application's conditions the hub's controllers set.
func hubConditions(app *unstructured.Unstructured) []any {
	return conditionsWhere(app, func(message string) bool { return strings.HasPrefix(message, pullmodel.HubConditionPrefix) })
}

// spokeConditions are the hub Application's conditions mirrored from the cluster.
func spokeConditions(app *unstructured.Unstructured) []any {
	return conditionsWhere(app, func(message string) bool { return !strings.HasPrefix(message, pullmodel.HubConditionPrefix) })
}

func conditionsWhere(app *unstructured.Unstructured, keep func(message string) bool) []any {
	all, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	var out []any
	for _, c := range all {
		m, _ := c.(map[string]any)
		message, _ := m["message"].(string)
		if keep(message) {
			out = append(out, c)
		}
	}
	return out
}

// warningEvents are the messages of the Warning Events of reason on the hub Application name.
func warningEvents(ctx SpecContext, g Gomega, name, reason string) []string {
	return warningEventsIn(ctx, g, argoNS, name, reason)
}

// warningEventsIn are the messages of the Warning Events of reason on hub Application
// namespace/name.
func warningEventsIn(ctx SpecContext, g Gomega, namespace, name, reason string) []string {
	events := &corev1.EventList{}
	g.ExpectWithOffset(1, hub.List(ctx, events, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Application" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
