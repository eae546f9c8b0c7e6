package appstatus_test

import (
	"context"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	pullreport "github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// setAgentAvailable creates or updates the cluster's argocd-pull addon with the given
// Available condition, as OCM does from the agent's lease.
func setAgentAvailable(ctx context.Context, cluster string, status metav1.ConditionStatus) {
	GinkgoHelper()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: apps.AddonName}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, mca))).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mca), mca)).To(Succeed())
		mca.Status.Conditions = []metav1.Condition{{
			Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: status, Reason: "Lease", LastTransitionTime: metav1.Now(),
		}}
		g.Expect(k8s.Status().Update(ctx, mca)).To(Succeed())
	}).Should(Succeed())
}

// writeAgentReport creates or replaces the agent's report of app on cluster.
func writeAgentReport(ctx context.Context, app *argov1alpha1.Application, cluster string, status appsv1alpha1.ApplicationReportStatus) {
	GinkgoHelper()
	key := client.ObjectKey{Namespace: cluster, Name: argoNamespace + "." + app.Name}
	Eventually(func(g Gomega) {
		rep := &appsv1alpha1.ApplicationStatusReport{}
		err := k8s.Get(ctx, key, rep)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		rep.Name, rep.Namespace = key.Name, key.Namespace
		rep.Source = appsv1alpha1.ApplicationReportSource{
			Cluster: cluster, Namespace: argoNamespace, Name: app.Name,
			HubApplicationNamespace: app.Namespace, HubApplicationName: app.Name,
		}
		rep.Status = status
		if err != nil {
			g.Expect(k8s.Create(ctx, rep)).To(Succeed())
			return
		}
		g.Expect(k8s.Update(ctx, rep)).To(Succeed())
	}).Should(Succeed())
}

func at(hour, minute int) metav1.Time {
	return metav1.NewTime(time.Date(2026, 11, 1, hour, minute, 0, 0, time.UTC))
}

var _ = Describe("Application status from the agent's report", func() {
	It("adds resources, conditions and messages; the newest source gives the scalars; one write per change", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		app := createApplication(ctx, builders.Application(cluster+"-full").Pulled().Cluster(cluster).OwnedBy("full", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)

		By("the feedback says Healthy; the agent, later, reports the sync failed")
		report(ctx, mw, synced, "")
		startedAt := at(10, 0)
		failed := appsv1alpha1.ApplicationReportStatus{
			ObservedAt: at(10, 1),
			Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1 replicas ready"},
			Sync:       appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusOutOfSync, Revision: "8f3c2b1"},
			OperationState: &appsv1alpha1.OperationStateReport{
				Phase: appsv1alpha1.OperationFailed, StartedAt: &startedAt, Message: `one or more objects failed to apply: Deployment "guestbook-ui"`,
			},
			Conditions: []appsv1alpha1.ApplicationConditionReport{{Type: "SyncError", Message: "Failed to sync Deployment guestbook/guestbook-ui"}},
			Resources: []appsv1alpha1.ResourceStatusReport{{
				Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Status: appsv1alpha1.SyncStatusOutOfSync, Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1"},
			}},
		}
		writeAgentReport(ctx, app, cluster, failed)
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusDegraded))
			g.Expect(cur.Status.Health.Message).To(Equal("0/1 replicas ready"))
			g.Expect(cur.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeOutOfSync))
			g.Expect(cur.Status.OperationState).NotTo(BeNil())
			g.Expect(cur.Status.OperationState.Phase).To(Equal(synccommon.OperationFailed))
			g.Expect(cur.Status.OperationState.Message).To(ContainSubstring("failed to apply"))
			g.Expect(cur.Status.Conditions).To(ConsistOf(HaveField("Type", argov1alpha1.ApplicationConditionSyncError)))
			g.Expect(cur.Status.Resources).To(ConsistOf(And(
				HaveField("Name", "guestbook-ui"), HaveField("Status", argov1alpha1.SyncStatusCodeOutOfSync),
				HaveField("Health.Status", health.HealthStatusDegraded), HaveField("Health.Message", "0/1"))))
		}).Should(Succeed())
		// Both sources have been read; let pending reconciles finish before counting.
		Expect(writes.Of("applications", app.Name)).To(BeNumerically(">", 0))
		Eventually(framework.Settled(appstatus.ControllerName, time.Second)).Should(BeTrue())
		base := writes.Of("applications", app.Name)

		By("the work agent repeats its older feedback: the report stays in front, nothing is written")
		for i := range 3 {
			report(ctx, mw, synced, time.Now().Format(time.RFC3339Nano)+string(rune('a'+i)))
		}
		Expect(getApp(ctx, Default, app).Status.Health.Status).To(Equal(health.HealthStatusDegraded))

		By("the feedback shows a new operation the agent has not reported yet: the feedback wins")
		running := spoke{health: "Progressing", sync: "Synced", revision: "9a8b7c6", phase: "Running", startedAt: "2026-11-01T10:05:00Z"}
		report(ctx, mw, running, "")
		cur := expectMirrored(ctx, app, running)
		// The repeats came before the new operation on the same watch, so the controller has
		// seen them by now: the only write since is the new operation's.
		Eventually(framework.Settled(appstatus.ControllerName, time.Second)).Should(BeTrue())
		Expect(writes.Of("applications", app.Name)).To(Equal(base+1), "writes for the repeated feedback")
		Expect(cur.Status.Resources).To(HaveLen(1), "details stay from the report")
		Expect(cur.Status.Health.Message).To(BeEmpty(), "the reported message explained another health")

		By("the agent reports the new operation succeeded: the report wins again")
		newStart := at(10, 5)
		succeeded := appsv1alpha1.ApplicationReportStatus{
			ObservedAt:     at(10, 6),
			Health:         appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy},
			Sync:           appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "9a8b7c6"},
			OperationState: &appsv1alpha1.OperationStateReport{Phase: appsv1alpha1.OperationSucceeded, StartedAt: &newStart, Message: "successfully synced"},
			Resources: []appsv1alpha1.ResourceStatusReport{{
				Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Status: appsv1alpha1.SyncStatusSynced, Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy},
			}},
		}
		writeAgentReport(ctx, app, cluster, succeeded)
		done := spoke{health: "Healthy", sync: "Synced", revision: "9a8b7c6", phase: "Succeeded", startedAt: "2026-11-01T10:05:00Z"}
		cur = expectMirrored(ctx, app, done)
		Expect(cur.Status.Conditions).To(BeEmpty())
		Expect(cur.Status.OperationState.Message).To(Equal("successfully synced"))
		Expect(isApplicationHealthy(cur)).To(BeTrue())

		By("no ping-pong between the two sources: exactly one write per change")
		Consistently(func() int { return writes.Of("applications", app.Name) }, 3*time.Second).Should(Equal(base + 2))
	})

	It("shows OutOfSync from the moment the hub's sources differ from those the cluster last compared", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		app := createApplication(ctx, builders.Application(cluster+"-template").Pulled().Cluster(cluster).OwnedBy("template", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)
		report(ctx, mw, synced, "")
		comparedAt := func(observed metav1.Time, spec *argov1alpha1.ApplicationSpec) appsv1alpha1.ApplicationReportStatus {
			return appsv1alpha1.ApplicationReportStatus{
				ObservedAt: observed,
				Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy},
				Sync: appsv1alpha1.SyncReport{
					Status: appsv1alpha1.SyncStatusSynced, Revision: "8f3c2b1", ComparedSources: pullreport.SpecSourcesDigest(spec),
				},
			}
		}

		By("the cluster compared the hub's sources: Synced")
		writeAgentReport(ctx, app, cluster, comparedAt(at(11, 0), &app.Spec))
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
			g.Expect(cur.Status.Sync.Revision).To(Equal("8f3c2b1"))
		}).Should(Succeed())

		By("the template changes the hub Application's path; nothing comes from the cluster: OutOfSync")
		var changed *argov1alpha1.Application
		Eventually(func(g Gomega) {
			changed = getApp(ctx, g, app)
			changed.Spec.Source.Path = "guestbook-v2"
			g.Expect(k8s.Update(ctx, changed)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeOutOfSync))
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusHealthy), "health is still the cluster's")
		}).Should(Succeed())

		By("a later report of the old comparison keeps it OutOfSync")
		writeAgentReport(ctx, app, cluster, comparedAt(at(11, 1), &app.Spec))
		Eventually(func(g Gomega) {
			rep := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: argoNamespace + "." + app.Name}, rep)).To(Succeed())
			g.Expect(rep.Status.ObservedAt.Time).To(BeTemporally("==", at(11, 1).Time))
		}).Should(Succeed())
		Eventually(framework.Settled(appstatus.ControllerName, time.Second)).Should(BeTrue())
		Expect(getApp(ctx, Default, app).Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeOutOfSync))

		By("the cluster compares the new path and reports it Synced: Synced")
		writeAgentReport(ctx, app, cluster, comparedAt(at(11, 2), &changed.Spec))
		Eventually(func(g Gomega) {
			g.Expect(getApp(ctx, g, app).Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
		}).Should(Succeed())
	})

	It("takes sync and health from the feedback while the agent is not available", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionUnknown)
		app := createApplication(ctx, builders.Application(cluster+"-silent").Pulled().Cluster(cluster).Build())
		mw := createManifestWork(ctx, app, cluster)

		writeAgentReport(ctx, app, cluster, appsv1alpha1.ApplicationReportStatus{
			ObservedAt: at(10, 30),
			Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded},
			Sync:       appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusOutOfSync},
			Conditions: []appsv1alpha1.ApplicationConditionReport{{Type: "ComparisonError", Message: "repository not accessible"}},
		})
		report(ctx, mw, synced, "")
		expectMirrored(ctx, app, synced)
		Eventually(func(g Gomega) {
			g.Expect(getApp(ctx, g, app).Status.Conditions).To(ConsistOf(
				HaveField("Type", argov1alpha1.ApplicationConditionComparisonError),
				HaveField("Type", pullmodel.ConditionStaleStatus)))
		}).Should(Succeed())
		stale := hubCondition(getApp(ctx, Default, app), pullmodel.ConditionStaleStatus)
		Expect(stale.Message).To(And(ContainSubstring("cluster "+cluster+"'s argocd-pull agent is unavailable"),
			ContainSubstring("Available is Unknown (Lease)"), ContainSubstring("last report, of "+at(10, 30).UTC().Format(time.RFC3339))))
		Eventually(func(g Gomega) []string {
			_, messages := warnings(ctx, g, app, string(pullmodel.ConditionStaleStatus))
			return messages
		}).Should(ContainElement(ContainSubstring(strings.TrimPrefix(stale.Message, pullmodel.HubConditionPrefix))),
			"a Warning Event says the status is stale")

		By("the agent comes back: its report, observed after the operation started, wins, and the status is no longer stale")
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusDegraded))
			g.Expect(hubCondition(cur, pullmodel.ConditionStaleStatus)).To(BeNil())
		}).Should(Succeed())
	})
})
