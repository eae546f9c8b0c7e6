package aggregation_test

import (
	"context"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/aggregation"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	healthy = spoke{health: "Healthy", sync: "Synced", revision: "8f3c2b1", phase: "Succeeded", startedAt: "2026-11-01T10:00:00Z"}
	failing = spoke{health: "Degraded", sync: "OutOfSync", revision: "8f3c2b1", phase: "Failed", startedAt: "2026-11-01T10:00:00Z"}
)

var _ = Describe("MulticlusterApplicationSetReport", func() {
	It("reports two clusters × two Applications, follows availability and departures, and goes with its ApplicationSet", func(ctx context.Context) {
		c1, c2 := newCluster(ctx), newCluster(ctx)
		appSet := createApplicationSet(ctx, "guestbook-"+c1)
		observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))

		By("two Applications of the ApplicationSet on each of two clusters, one failing")
		type pulled struct {
			app *argov1alpha1.Application
			mw  *workv1.ManifestWork
		}
		var all []pulled
		for _, cluster := range []string{c1, c2} {
			for _, name := range []string{"frontend", "backend"} {
				app := createApplication(ctx, cluster+"-"+name, cluster, appSet)
				all = append(all, pulled{app: app, mw: createManifestWork(ctx, app)})
			}
		}
		bad := all[0] // c1's frontend
		for _, p := range all {
			if p == bad {
				setFeedback(ctx, p.mw, failing, "")
				writeReport(ctx, failingReport(p.app, observed))
				continue
			}
			setFeedback(ctx, p.mw, healthy, "")
			writeReport(ctx, healthyReport(p.app, observed))
		}

		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.Summary).To(Equal(appsv1alpha1.ReportSummary{
				Clusters: "2", Healthy: "3", NotHealthy: "1", Synced: "3", NotSynced: "1", InProgress: "0", AgentsUnavailable: "0",
			}))
			g.Expect(report.Statuses.ClusterConditions).To(HaveLen(4))
			g.Expect(report.Statuses.Resources).To(ConsistOf(
				appsv1alpha1.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
				appsv1alpha1.ResourceRef{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
			))
			e := entryOf(g, report, bad.app)
			g.Expect(e.HealthStatus).To(Equal("Degraded"))
			g.Expect(e.SyncStatus).To(Equal("OutOfSync"))
			g.Expect(e.OperationStatePhase).To(Equal("Failed"))
			g.Expect(e.SyncRevision).To(Equal("8f3c2b1"))
			g.Expect(e.Conditions).To(ContainElement(And(
				HaveField("Type", "SyncError"), HaveField("Message", ContainSubstring("guestbook/guestbook-ui")))))
			g.Expect(e.FailingResources).To(ConsistOf(appsv1alpha1.FailingResource{
				APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				SyncStatus: "OutOfSync", HealthStatus: "Degraded", Message: "0/1 ready",
			}))
			g.Expect(e.AgentAvailable).To(HaveValue(BeTrue()))
			g.Expect(e.LastReportedAt).NotTo(BeNil())
			g.Expect(e.LastReportedAt.Time).To(BeTemporally("==", observed.Time))
			for _, p := range all[1:] {
				ok := entryOf(g, report, p.app)
				g.Expect(ok.HealthStatus).To(Equal("Healthy"))
				g.Expect(ok.Conditions).To(BeEmpty())
				g.Expect(ok.FailingResources).To(BeEmpty())
			}
			g.Expect(report.Labels).To(HaveKeyWithValue(appsv1alpha1.LabelHostingApplicationSet, apps.ApplicationSetLabelValue(argoNamespace+"/"+appSet.Name)))
			g.Expect(report.OwnerReferences).To(ConsistOf(HaveField("UID", appSet.UID)))
		}).Should(Succeed())

		By("the failing hub Application shows the spoke's real state")
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, bad.app)
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusDegraded))
			g.Expect(cur.Status.Health.Message).To(Equal("Deployment guestbook-ui has 0/1 ready replicas"))
			g.Expect(cur.Status.Conditions).To(ConsistOf(HaveField("Type", "SyncError")))
			g.Expect(cur.Status.OperationState).NotTo(BeNil())
			g.Expect(cur.Status.OperationState.Message).To(ContainSubstring("failed to apply"))
			g.Expect(cur.Status.Resources).To(ContainElement(And(
				HaveField("Kind", "Deployment"), HaveField("Name", "guestbook-ui"),
				HaveField("Status", argov1alpha1.SyncStatusCodeOutOfSync),
				HaveField("Health.Status", health.HealthStatusDegraded))))
		}).Should(Succeed())

		By("the agent of the second cluster becomes unavailable; its health still follows the work feedback")
		since := metav1.NewTime(time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC))
		setAgentAvailable(ctx, c2, metav1.ConditionUnknown, since)
		degraded := healthy
		degraded.health = "Degraded"
		setFeedback(ctx, all[2].mw, degraded, "")
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			for _, p := range all[2:] {
				e := entryOf(g, report, p.app)
				g.Expect(e.AgentAvailable).To(HaveValue(BeFalse()))
				g.Expect(e.Conditions).To(ContainElement(And(
					HaveField("Type", appsv1alpha1.ConditionAgentUnavailable),
					HaveField("Message", And(ContainSubstring("2026-11-01T11:00:00Z"), ContainSubstring("stale"))))))
			}
			g.Expect(entryOf(g, report, all[2].app).HealthStatus).To(Equal("Degraded"), "health comes from the work feedback")
			g.Expect(entryOf(g, report, all[3].app).HealthStatus).To(Equal("Healthy"))
			g.Expect(report.Statuses.Summary.Healthy).To(Equal("2"))
			g.Expect(report.Statuses.Summary.AgentsUnavailable).To(Equal("1"), "one cluster, two entries")
			g.Expect(entryOf(g, report, all[1].app).AgentAvailable).To(HaveValue(BeTrue()))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getApp(ctx, g, all[2].app).Status.Health.Status).To(Equal(health.HealthStatusDegraded))
		}).Should(Succeed())

		By("the second cluster leaves: its ManifestWorks and reports go")
		for _, p := range all[2:] {
			Expect(k8s.Delete(ctx, p.mw)).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, newAgentReport(p.app, observed)))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.ClusterConditions).To(HaveLen(2))
			g.Expect(report.Statuses.ClusterConditions).To(HaveEach(HaveField("Cluster", c1)))
			g.Expect(report.Statuses.Summary.Clusters).To(Equal("1"))
		}).Should(Succeed())

		By("an Application is deleted: its entry goes")
		Expect(k8s.Delete(ctx, all[1].mw)).To(Succeed())
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.ClusterConditions).To(HaveLen(1))
			g.Expect(report.Statuses.Summary).To(Equal(appsv1alpha1.ReportSummary{
				Clusters: "1", Healthy: "0", NotHealthy: "1", Synced: "0", NotSynced: "1", InProgress: "0", AgentsUnavailable: "0",
			}))
		}).Should(Succeed())

		By("the ApplicationSet is deleted: so is its report")
		Expect(k8s.Delete(ctx, appSet)).To(Succeed())
		Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(appSet), &appsv1alpha1.MulticlusterApplicationSetReport{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("writes the report once per change, never for unchanged input", func(ctx context.Context) {
		c1 := newCluster(ctx)
		appSet := createApplicationSet(ctx, "count-"+c1)
		app := createApplication(ctx, c1+"-count", c1, appSet)
		mw := createManifestWork(ctx, app)
		observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))
		setFeedback(ctx, mw, healthy, "")
		writeReport(ctx, healthyReport(app, observed))

		var settled *appsv1alpha1.MulticlusterApplicationSetReport
		Eventually(func(g Gomega) {
			settled = getReport(ctx, g, appSet)
			g.Expect(settled.Statuses.ClusterConditions).To(HaveLen(1))
			g.Expect(settled.Statuses.ClusterConditions[0].LastReportedAt).NotTo(BeNil())
			g.Expect(settled.Statuses.ClusterConditions[0].SyncRevision).To(Equal("8f3c2b1"))
		}).Should(Succeed())
		// Let the reconciles of the settling events finish before counting.
		Consistently(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).ResourceVersion).To(Equal(settled.ResourceVersion))
		}, 2*time.Second).Should(Succeed())
		before := writes.Of("multiclusterapplicationsetreports", appSet.Name)

		By("the work agent rewrites the same feedback, the agent rewrites the same report, the addon is touched")
		for i := range 3 {
			setFeedback(ctx, mw, healthy, time.Now().Format(time.RFC3339Nano)+string(rune('a'+i)))
			writeReport(ctx, healthyReport(app, observed))
		}
		// These pass the event filters and reconcile with unchanged input.
		setAgentAvailable(ctx, c1, metav1.ConditionTrue, metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)))
		Eventually(func(g Gomega) {
			cur := &workv1.ManifestWork{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
			cur.Annotations["example.com/touched"] = "yes"
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Consistently(func() int { return writes.Of("multiclusterapplicationsetreports", appSet.Name) }, 4*time.Second).Should(Equal(before))

		By("a real change is one write")
		changed := healthyReport(app, metav1.NewTime(observed.Add(time.Minute)))
		changed.Status.Health.Status = appsv1alpha1.HealthStatusProgressing
		writeReport(ctx, changed)
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.Summary.InProgress).To(Equal("1"))
		}).Should(Succeed())
		Consistently(func() int { return writes.Of("multiclusterapplicationsetreports", appSet.Name) }).Should(Equal(before + 1))
	})

	It("gives a standalone pulled Application full hub status and no report", func(ctx context.Context) {
		c1 := newCluster(ctx)
		app := createApplication(ctx, "standalone-"+c1, c1, nil)
		mw := createManifestWork(ctx, app)
		setFeedback(ctx, mw, failing, "")
		writeReport(ctx, failingReport(app, metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))))

		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusDegraded))
			g.Expect(cur.Status.Conditions).To(ConsistOf(HaveField("Type", "SyncError")))
			g.Expect(cur.Status.Resources).To(HaveLen(2))
			g.Expect(cur.Status.Health.Message).NotTo(BeEmpty())
		}).Should(Succeed())

		By("an ApplicationSet's Application on the same cluster, after the standalone one, reaches its report")
		// The positive control: once the later Application's entry is in a report, the
		// aggregation has seen the cluster's works and reports, the standalone one's too.
		appSet := createApplicationSet(ctx, "owned-"+c1)
		owned := createApplication(ctx, "owned-"+c1, c1, appSet)
		setFeedback(ctx, createManifestWork(ctx, owned), healthy, "")
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.ClusterConditions).To(ConsistOf(HaveField("App", ContainSubstring("/"+owned.Name+"/"))))
		}).Should(Succeed())
		reports := &appsv1alpha1.MulticlusterApplicationSetReportList{}
		Expect(k8s.List(ctx, reports, client.InNamespace(argoNamespace))).To(Succeed())
		for _, r := range reports.Items {
			Expect(r.Statuses.ClusterConditions).NotTo(ContainElement(HaveField("App", ContainSubstring("/"+app.Name+"/"))),
				"report %s lists the standalone Application", r.Name)
		}
	})

	It("leaves out an Application whose ManifestWork is being deleted, while a finalizer holds it", func(ctx context.Context) {
		c1, c2 := newCluster(ctx), newCluster(ctx)
		appSet := createApplicationSet(ctx, "leaving-"+c1)
		staying := createApplication(ctx, c1+"-leaving", c1, appSet)
		setFeedback(ctx, createManifestWork(ctx, staying), healthy, "")
		leaving := createApplication(ctx, c2+"-leaving", c2, appSet)
		leavingWork := createManifestWork(ctx, leaving)
		setFeedback(ctx, leavingWork, healthy, "")
		Eventually(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).Statuses.Summary.Clusters).To(Equal("2"))
		}).Should(Succeed())

		By("a finalizer holds the work while it is deleted, as OCM's work agent does until the spoke is clean")
		const hold = "test.open-cluster-management.io/hold"
		Eventually(func() error {
			cur := &workv1.ManifestWork{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(leavingWork), cur); err != nil {
				return err
			}
			cur.Finalizers = append(cur.Finalizers, hold)
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Expect(k8s.Delete(ctx, leavingWork)).To(Succeed())
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.Summary.Clusters).To(Equal("1"))
			g.Expect(report.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", c1)))
		}).Should(Succeed())
		cur := &workv1.ManifestWork{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(leavingWork), cur)).To(Succeed(), "the work is still there, held by its finalizer")
		Expect(cur.DeletionTimestamp).NotTo(BeNil())

		cur.Finalizers = nil
		Expect(k8s.Update(ctx, cur)).To(Succeed())
	})

	It("does not create a report for an ApplicationSet without pulled Applications", func(ctx context.Context) {
		before := framework.Reconciles(aggregation.ControllerName)
		appSet := createApplicationSet(ctx, "empty")
		// The controller looked at the new ApplicationSet before the absence counts.
		Eventually(func() float64 { return framework.Reconciles(aggregation.ControllerName) }).Should(BeNumerically(">", before))
		err := k8s.Get(ctx, client.ObjectKeyFromObject(appSet), &appsv1alpha1.MulticlusterApplicationSetReport{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a report exists: %v", err)
	})
})
