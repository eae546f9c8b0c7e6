package aggregation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// createHubRenderedApplication creates an ordinary hub Application of appSet for cluster,
// delivered through the ocm-manifestwork plugin: no pull label, destination the hub itself
// with the cluster's namespace.
func createHubRenderedApplication(ctx context.Context, name, cluster string, appSet *argov1alpha1.ApplicationSet) *argov1alpha1.Application {
	GinkgoHelper()
	app := builders.Application(name).OwnedBy(appSet.Name, appSet.UID).
		Destination(argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: cluster}).
		Plugin("ocm-manifestwork").Build()
	Expect(k8s.Create(ctx, app)).To(Succeed())
	return app
}

// setHubStatus writes the status the hub's Argo CD computes for a hub-rendered Application:
// it manages the ManifestWork named after it in the cluster's namespace, and its health is
// the ManifestWork health check's. refreshed varies reconciledAt only, as every refresh does.
func setHubStatus(ctx context.Context, app *argov1alpha1.Application, h health.HealthStatusCode, refreshed time.Time) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := getApp(ctx, g, app)
		reconciledAt := metav1.NewTime(refreshed)
		cur.Status = argov1alpha1.ApplicationStatus{
			Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "53e28ff"},
			Health: argov1alpha1.HealthStatus{Status: h},
			OperationState: &argov1alpha1.OperationState{
				Phase: synccommon.OperationSucceeded, Message: "successfully synced (all tasks run)",
				StartedAt: metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)),
			},
			Resources: []argov1alpha1.ResourceStatus{{
				Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWork",
				Namespace: app.Spec.Destination.Namespace, Name: app.Name, Status: argov1alpha1.SyncStatusCodeSynced,
			}},
			ReconciledAt: &reconciledAt,
		}
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// createRenderedWork creates the ManifestWork the plugin renders for app, as the hub's Argo
// CD applies it.
func createRenderedWork(ctx context.Context, app *argov1alpha1.Application) *workv1.ManifestWork {
	GinkgoHelper()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "guestbook-ui", "namespace": "guestbook"},
	})
	Expect(err).NotTo(HaveOccurred())
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Spec.Destination.Namespace,
			Labels: map[string]string{apps.LabelHubRendered: "true"},
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: app.Namespace, apps.AnnotationHubApplicationName: app.Name,
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}}},
		},
	}
	Expect(k8s.Create(ctx, mw)).To(Succeed())
	return mw
}

// appliedManifest is the work agent's status of one manifest.
type appliedManifest struct {
	group, kind, name string
	// applyError, when set, makes the manifest's Applied condition False with it.
	applyError string
}

// setWorkStatus writes the status OCM's work agent writes; note varies the transition
// times only.
func setWorkStatus(ctx context.Context, mw *workv1.ManifestWork, manifests []appliedManifest, note time.Time) {
	GinkgoHelper()
	at := metav1.NewTime(note)
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
		applied := metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete",
			Message: "Apply manifest work complete", ObservedGeneration: cur.Generation, LastTransitionTime: at}
		cur.Status.ResourceStatus.Manifests = nil
		for i, m := range manifests {
			mc := workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: m.group, Version: "v1", Kind: m.kind, Namespace: "guestbook", Name: m.name},
				Conditions: []metav1.Condition{
					{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "Apply manifest complete", LastTransitionTime: at},
					{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable", Message: "Resource is available", LastTransitionTime: at},
				},
			}
			if m.applyError != "" {
				mc.Conditions[0].Status, mc.Conditions[0].Reason, mc.Conditions[0].Message = metav1.ConditionFalse, "AppliedManifestFailed", m.applyError
				applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, "AppliedManifestWorkFailed", "Failed to apply manifest work"
			}
			cur.Status.ResourceStatus.Manifests = append(cur.Status.ResourceStatus.Manifests, mc)
		}
		cur.Status.Conditions = []metav1.Condition{applied, {
			Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable",
			Message: "All resources are available", ObservedGeneration: cur.Generation, LastTransitionTime: at,
		}}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// hubRenderedEntryOf is the report's entry of the hub-rendered app.
func hubRenderedEntryOf(g Gomega, report *appsv1alpha1.MulticlusterApplicationSetReport, app *argov1alpha1.Application) appsv1alpha1.ClusterCondition {
	cluster := app.Spec.Destination.Namespace
	want := fmt.Sprintf("%s/%s/%s/%s", argoNamespace, app.Name, cluster, app.Name)
	for _, e := range report.Statuses.ClusterConditions {
		if e.App == want {
			g.Expect(e.Cluster).To(Equal(cluster))
			return e
		}
	}
	g.Expect(report.Statuses.ClusterConditions).To(ContainElement(HaveField("App", want)))
	return appsv1alpha1.ClusterCondition{}
}

var guestbookManifests = []appliedManifest{{kind: "Service", name: "guestbook-ui"}, {group: "apps", kind: "Deployment", name: "guestbook-ui"}}

var _ = Describe("MulticlusterApplicationSetReport with hub-rendered delivery", func() {
	It("reports a pulled and a hub-rendered Application side by side, follows the work's status, and writes only on change", func(ctx context.Context) {
		pulledCluster, renderedCluster := newCluster(ctx), newCluster(ctx)
		appSet := createApplicationSet(ctx, "mixed-"+pulledCluster)
		observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))

		By("a pulled Application on one cluster, a hub-rendered one on the other")
		pulled := createApplication(ctx, pulledCluster+"-guestbook", pulledCluster, appSet)
		pulledWork := createManifestWork(ctx, pulled)
		setFeedback(ctx, pulledWork, healthy, "")
		writeReport(ctx, healthyReport(pulled, observed))

		rendered := createHubRenderedApplication(ctx, renderedCluster+"-guestbook", renderedCluster, appSet)
		setHubStatus(ctx, rendered, health.HealthStatusHealthy, time.Now())
		renderedWork := createRenderedWork(ctx, rendered)
		setWorkStatus(ctx, renderedWork, guestbookManifests, time.Now())

		var settled *appsv1alpha1.MulticlusterApplicationSetReport
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.Summary).To(Equal(appsv1alpha1.ReportSummary{
				Clusters: "2", Healthy: "2", NotHealthy: "0", Synced: "2", NotSynced: "0", InProgress: "0", AgentsUnavailable: "0",
			}))
			g.Expect(report.Statuses.ClusterConditions).To(HaveLen(2))
			g.Expect(entryOf(g, report, pulled).Delivery).To(Equal(appsv1alpha1.DeliveryPull))
			e := hubRenderedEntryOf(g, report, rendered)
			g.Expect(e.Delivery).To(Equal(appsv1alpha1.DeliveryHubRendered))
			g.Expect(e.SyncStatus).To(Equal("Synced"))
			g.Expect(e.HealthStatus).To(Equal("Healthy"))
			g.Expect(e.SyncRevision).To(Equal("53e28ff"))
			g.Expect(e.OperationStatePhase).To(Equal("Succeeded"))
			g.Expect(e.OperationStateStartedAt).To(Equal("2026-11-01T10:00:00Z"))
			g.Expect(e.AgentAvailable).To(BeNil(), "no agent in this mode")
			g.Expect(e.LastReportedAt).To(BeNil())
			g.Expect(e.Conditions).To(BeEmpty())
			g.Expect(e.FailingResources).To(BeEmpty())
			g.Expect(report.Statuses.Resources).To(ConsistOf(
				appsv1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
				appsv1alpha1.ResourceRef{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
			))
			settled = report
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).ResourceVersion).To(Equal(settled.ResourceVersion))
		}, 2*time.Second).Should(Succeed())
		before := writes.Of("multiclusterapplicationsetreports", appSet.Name)

		By("the work agent rewrites the same status, Argo CD refreshes the Application: no write")
		for range 3 {
			setWorkStatus(ctx, renderedWork, guestbookManifests, time.Now())
			setHubStatus(ctx, rendered, health.HealthStatusHealthy, time.Now())
		}
		Consistently(func() int { return writes.Of("multiclusterapplicationsetreports", appSet.Name) }, 4*time.Second).Should(Equal(before))

		By("a manifest fails to apply: the report names it with the work agent's message")
		const applyError = `Failed to apply manifest: deployments.apps "guestbook-ui" is forbidden: exceeded quota`
		setWorkStatus(ctx, renderedWork, []appliedManifest{guestbookManifests[0], {group: "apps", kind: "Deployment", name: "guestbook-ui", applyError: applyError}}, time.Now())
		setHubStatus(ctx, rendered, health.HealthStatusDegraded, time.Now())
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			e := hubRenderedEntryOf(g, report, rendered)
			g.Expect(e.HealthStatus).To(Equal("Degraded"))
			g.Expect(e.FailingResources).To(ConsistOf(appsv1alpha1.FailingResource{
				APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				SyncStatus: "OutOfSync", Message: applyError,
			}))
			g.Expect(e.Conditions).To(ConsistOf(appsv1alpha1.Condition{
				Type:    appsv1alpha1.ConditionManifestWorkNotApplied,
				Message: "Failed to apply manifest work: Deployment guestbook/guestbook-ui: " + applyError,
			}))
			g.Expect(report.Statuses.Summary.Healthy).To(Equal("1"))
			g.Expect(report.Statuses.Summary.NotHealthy).To(Equal("1"))
		}).Should(Succeed())

		By("the hub-rendered ManifestWork is deleted: its entry goes, the pulled one stays")
		Expect(k8s.Delete(ctx, renderedWork)).To(Succeed())
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", pulledCluster)))
			g.Expect(report.Statuses.Summary).To(Equal(appsv1alpha1.ReportSummary{
				Clusters: "1", Healthy: "1", NotHealthy: "0", Synced: "1", NotSynced: "0", InProgress: "0", AgentsUnavailable: "0",
			}))
		}).Should(Succeed())

		By("Argo CD applies it again, then the hub-rendered Application is deleted: its entry goes")
		renderedWork = createRenderedWork(ctx, rendered)
		setWorkStatus(ctx, renderedWork, guestbookManifests, time.Now())
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.ClusterConditions).To(HaveLen(2))
		}).Should(Succeed())
		// Deleted without cascade: the ManifestWork stays behind, an orphan of no
		// ApplicationSet.
		Expect(k8s.Delete(ctx, rendered)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", pulledCluster)))
		}).Should(Succeed())
	})
})
