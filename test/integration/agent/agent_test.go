package agent_test

import (
	"fmt"
	"math"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

var _ = Describe("Agent", Ordered, func() {
	Context("on a managed cluster without Argo CD", func() {
		It("says on its ManagedClusterAddOn that Argo CD is not installed, and keeps running", func() {
			Eventually(addonCondition).Should(HaveField("Reason", apps.ReasonArgoCDNotInstalled))
			Expect(addonCondition().Status).To(Equal(metav1.ConditionFalse))
			Consistently(theAgent.done).ShouldNot(Receive())
		})

		It("reports Applications once Argo CD's CRD appears, and names the missing watched namespace", func() {
			Expect(managedServer.InstallArgoCDCRDs()).To(Succeed())
			createApplication(pulledApp(argoNamespace, "first").Build(), syncedHealthy("abc"))
			Eventually(reportOf(argoNamespace, "first")).Should(HaveField("Status.Sync.Status", appsv1alpha1.SyncStatusSynced))

			Eventually(addonCondition).Should(HaveField("Reason", apps.ReasonWatchedNamespaceMissing))
			Expect(addonCondition().Message).To(ContainSubstring(teamNamespace))
		})

		It("clears the condition once the namespace exists, and reports its Applications", func() {
			Expect(managed.Create(ctx, namespace(teamNamespace))).To(Succeed())
			Eventually(addonCondition).Should(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", apps.ReasonApplicationsWatched),
				HaveField("Message", "Watching Argo CD Applications in namespaces argocd, team-b.")))

			createApplication(pulledApp(teamNamespace, "team-app").Build(), syncedHealthy("def"))
			Eventually(reportOf(teamNamespace, "team-app")).Should(HaveField("Status.Sync.Revision", "def"))
		})
	})

	Context("reporting Applications", func() {
		DescribeTable("reports the status Argo CD wrote",
			func(name string, status argov1alpha1.ApplicationStatus, want func(Gomega, appsv1alpha1.ApplicationReportStatus)) {
				createApplication(pulledApp(argoNamespace, name).Build(), status)
				Eventually(func(g Gomega) {
					rep := &appsv1alpha1.ApplicationStatusReport{}
					g.Expect(hub.Get(ctx, reportKey(argoNamespace, name), rep)).To(Succeed())
					g.Expect(rep.Status.ObservedAt.IsZero()).To(BeFalse())
					want(g, rep.Status)
				}).Should(Succeed())
			},
			Entry("Synced and Healthy", "synced-healthy", syncedHealthy("abc123"), func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.Sync).To(Equal(appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "abc123"}))
				g.Expect(s.Health.Status).To(Equal(appsv1alpha1.HealthStatusHealthy))
				g.Expect(s.OperationState).To(HaveField("Phase", appsv1alpha1.OperationSucceeded))
				g.Expect(s.OperationState.FinishedAt).NotTo(BeNil())
				g.Expect(s.Resources).To(HaveLen(2))
				g.Expect(s.Resources[0].Health).To(HaveField("Status", appsv1alpha1.HealthStatusHealthy))
			}),
			Entry("Progressing, operation running", "progressing", argov1alpha1.ApplicationStatus{
				Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "abc"},
				Health: argov1alpha1.HealthStatus{Status: health.HealthStatusProgressing},
				OperationState: &argov1alpha1.OperationState{
					Phase: synccommon.OperationRunning, Message: "waiting for healthy state of apps/Deployment/web", StartedAt: started,
				},
			}, func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.Health.Status).To(Equal(appsv1alpha1.HealthStatusProgressing))
				g.Expect(s.OperationState).To(HaveField("Phase", appsv1alpha1.OperationRunning))
				g.Expect(s.OperationState.Message).To(ContainSubstring("waiting for healthy state"))
				g.Expect(s.OperationState.FinishedAt).To(BeNil())
			}),
			Entry("SyncError with a failing resource", "sync-error", argov1alpha1.ApplicationStatus{
				Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync, Revision: "bad"},
				Health: argov1alpha1.HealthStatus{Status: health.HealthStatusMissing},
				OperationState: &argov1alpha1.OperationState{
					Phase: synccommon.OperationFailed, Message: "one or more objects failed to apply", StartedAt: started, FinishedAt: &finished,
				},
				Conditions: []argov1alpha1.ApplicationCondition{{
					Type: argov1alpha1.ApplicationConditionSyncError, Message: "Failed sync attempt to bad: one or more objects failed to apply", LastTransitionTime: &started,
				}},
				Resources: []argov1alpha1.ResourceStatus{{
					Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web",
					Status: argov1alpha1.SyncStatusCodeOutOfSync, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusMissing},
				}},
			}, func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.Sync.Status).To(Equal(appsv1alpha1.SyncStatusOutOfSync))
				g.Expect(s.OperationState).To(HaveField("Phase", appsv1alpha1.OperationFailed))
				g.Expect(s.Conditions).To(ConsistOf(And(HaveField("Type", "SyncError"), HaveField("Message", ContainSubstring("failed to apply")),
					HaveField("LastTransitionTime", Not(BeNil())))))
				g.Expect(s.Resources).To(ConsistOf(And(HaveField("Name", "web"), HaveField("Status", appsv1alpha1.SyncStatusOutOfSync),
					HaveField("Health.Status", appsv1alpha1.HealthStatusMissing))))
			}),
			Entry("ComparisonError", "comparison-error", argov1alpha1.ApplicationStatus{
				Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeUnknown},
				Health: argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy},
				Conditions: []argov1alpha1.ApplicationCondition{{
					Type: argov1alpha1.ApplicationConditionComparisonError, Message: "rpc error: code = Unknown desc = repository not found", LastTransitionTime: &started,
				}},
			}, func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.Sync.Status).To(Equal(appsv1alpha1.SyncStatusUnknown))
				g.Expect(s.Conditions).To(ConsistOf(HaveField("Type", "ComparisonError")))
			}),
			Entry("OperationError", "operation-error", argov1alpha1.ApplicationStatus{
				Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync},
				Health: argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy},
				OperationState: &argov1alpha1.OperationState{
					Phase: synccommon.OperationError, Message: "ComparisonError: project default not found", StartedAt: started, FinishedAt: &finished,
				},
				Conditions: []argov1alpha1.ApplicationCondition{{Type: "OperationError", Message: "project default not found", LastTransitionTime: &started}},
			}, func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.OperationState).To(HaveField("Phase", appsv1alpha1.OperationError))
				g.Expect(s.Conditions).To(ConsistOf(HaveField("Type", "OperationError")))
			}),
			Entry("resources without health: health kept in the app tree (Argo CD v3)", "app-tree", argov1alpha1.ApplicationStatus{
				Sync:                 argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "v3"},
				Health:               argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded},
				ResourceHealthSource: argov1alpha1.ResourceHealthLocationAppTree,
				Resources: []argov1alpha1.ResourceStatus{
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "web", Status: argov1alpha1.SyncStatusCodeSynced},
					{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "web-config", Status: argov1alpha1.SyncStatusCodeSynced,
						Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
				},
			}, func(g Gomega, s appsv1alpha1.ApplicationReportStatus) {
				g.Expect(s.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceAppTree))
				g.Expect(s.Resources).To(ConsistOf(
					And(HaveField("Kind", "Deployment"), HaveField("Health", BeNil())),
					And(HaveField("Kind", "ConfigMap"), HaveField("Health.Status", appsv1alpha1.HealthStatusHealthy))))
			}),
		)

		It("fills the source and the labels a hub reader selects reports by", func() {
			app := pulledApp(argoNamespace, "from-appset").HostingApplicationSet("appsets/guestbook").Build()
			created := createApplication(app, syncedHealthy("abc"))
			rep := &appsv1alpha1.ApplicationStatusReport{}
			Eventually(func() error { return hub.Get(ctx, reportKey(argoNamespace, "from-appset"), rep) }).Should(Succeed())
			Expect(rep.Source).To(Equal(appsv1alpha1.ApplicationReportSource{
				Cluster: clusterName, Namespace: argoNamespace, Name: "from-appset", UID: string(created.UID),
				HubApplicationNamespace: hubAppNS, HubApplicationName: "from-appset", ApplicationSet: "appsets/guestbook",
			}))
			mca := managedClusterAddOn()
			Expect(hub.Get(ctx, client.ObjectKeyFromObject(mca), mca)).To(Succeed())
			Expect(rep.OwnerReferences).To(ConsistOf(And(
				HaveField("Kind", "ManagedClusterAddOn"), HaveField("Name", apps.AddonName), HaveField("UID", mca.UID),
				HaveField("Controller", BeNil()), HaveField("BlockOwnerDeletion", BeNil()))),
				"owned by the ManagedClusterAddOn: disabling the addon deletes the report")

			byApp := &appsv1alpha1.ApplicationStatusReportList{}
			Expect(hub.List(ctx, byApp, client.MatchingLabels{
				apps.LabelReportHubApplication: apps.HubApplicationLabelValue(hubAppNS, "from-appset")})).To(Succeed())
			Expect(byApp.Items).To(ConsistOf(HaveField("Name", rep.Name)))
			byAppSet := &appsv1alpha1.ApplicationStatusReportList{}
			Expect(hub.List(ctx, byAppSet, client.MatchingLabels{
				apps.LabelReportApplicationSet: apps.ApplicationSetLabelValue("appsets/guestbook")})).To(Succeed())
			Expect(byAppSet.Items).To(ConsistOf(HaveField("Name", rep.Name)))
		})

		It("writes no report for an Application created on the managed cluster itself", func() {
			createApplication(builders.Application("local-only").Namespace(argoNamespace).Build(), syncedHealthy("abc"))
			// The positive control: a pulled Application created after it. The informer
			// delivers the two in order, the coalescing window makes local-only's queue entry
			// due first, and the report controller's one worker takes entries in that order:
			// once the second one's report exists, the agent has looked at local-only.
			createApplication(pulledApp(argoNamespace, "after-local-only").Build(), syncedHealthy("abc"))
			Eventually(reportOf(argoNamespace, "after-local-only")).ShouldNot(BeNil())
			Expect(reportWrites(report.ReportName(argoNamespace, "local-only"))).To(BeZero())
			Consistently(func() bool {
				return apierrors.IsNotFound(hub.Get(ctx, reportKey(argoNamespace, "local-only"), &appsv1alpha1.ApplicationStatusReport{}))
			}).Should(BeTrue())
			Expect(reportWrites(report.ReportName(argoNamespace, "local-only"))).To(BeZero())
		})

		It("updates the report when Argo CD changes the status", func() {
			key := createApplication(pulledApp(argoNamespace, "changing").Build(), syncedHealthy("one"))
			Eventually(reportOf(argoNamespace, "changing")).Should(HaveField("Status.Sync.Revision", "one"))
			status := syncedHealthy("two")
			status.Health = argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "Deployment has minimum availability false"}
			Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(key), status)).To(Succeed())
			Eventually(reportOf(argoNamespace, "changing")).Should(And(
				HaveField("Status.Sync.Revision", "two"),
				HaveField("Status.Health", appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "Deployment has minimum availability false"})))
		})

		It("deletes the report when the Application is deleted", func() {
			app := createApplication(pulledApp(argoNamespace, "short-lived").Build(), syncedHealthy("abc"))
			Eventually(reportOf(argoNamespace, "short-lived")).ShouldNot(BeNil())
			Expect(managed.Delete(ctx, app)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(hub.Get(ctx, reportKey(argoNamespace, "short-lived"), &appsv1alpha1.ApplicationStatusReport{}))
			}).Should(BeTrue())
		})

		It("coalesces a burst of 100 status updates into a handful of writes", func() {
			app := createApplication(pulledApp(argoNamespace, "bursty").Build(), syncedHealthy("rev-start"))
			name := report.ReportName(argoNamespace, "bursty")
			Eventually(reportOf(argoNamespace, "bursty")).Should(HaveField("Status.Sync.Revision", "rev-start"))
			before := reportWrites(name)
			start := time.Now()
			for i := range 100 {
				Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), syncedHealthy(fmt.Sprintf("rev-%03d", i)))).To(Succeed())
			}
			Eventually(reportOf(argoNamespace, "bursty")).Should(HaveField("Status.Sync.Revision", "rev-099"))
			took := time.Since(start)
			Consistently(func() int { return reportWrites(name) }).Should(Equal(reportWrites(name)))
			burstWrites := reportWrites(name) - before
			// The bound follows from the coalescing window and from how long this run's burst
			// took, not from how fast the machine is. Each write is one reconcile, and each
			// reconcile one queue entry of the Application: an entry opens with an event and
			// takes in every event until it is due a window later, so entries open at least a
			// window apart. Those that wrote opened before the report showed the last update;
			// all but one after the first update (the exception: the entry the report's own
			// previous write opened).
			window := agent.DefaultCoalesceWindow
			most := int(took/window) + 2
			AddReportEntry("writes for 100 status updates", fmt.Sprintf("%d in %s (at most %d)", burstWrites, took.Round(time.Millisecond), most))
			Expect(burstWrites).To(And(BeNumerically(">=", 1), BeNumerically("<=", most)))
		})

		It("writes nothing when an Application changes in ways the report does not show", func() {
			app := createApplication(pulledApp(argoNamespace, "quiet").Build(), syncedHealthy("abc"))
			name := report.ReportName(argoNamespace, "quiet")
			Eventually(reportOf(argoNamespace, "quiet")).Should(HaveField("Status.Sync.Revision", "abc"))
			written := reportWrites(name)
			unchangedBefore := unchangedReconciles()
			for i := range 5 {
				status := syncedHealthy("abc")
				status.ReconciledAt = &metav1.Time{Time: started.Add(time.Duration(i+1) * time.Minute)}
				Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), status)).To(Succeed())
			}
			// The agent did look at the changes, and wrote nothing.
			Eventually(unchangedReconciles).Should(BeNumerically(">", unchangedBefore))
			Consistently(func() int { return reportWrites(name) }).Should(Equal(written))
		})
	})

	Context("telling where Argo CD keeps resource health", resourceHealthSpecs)

	Context("reading Argo CD's resource tree from its Redis", resourceTreeSpecs)

	Context("sending each Application's resource tree to the hub", applicationTreeSpecs)

	Context("when the hub is unreachable", func() {
		It("retries with backoff and writes what changed once the hub is back", func() {
			app := createApplication(pulledApp(argoNamespace, "outage").Build(), syncedHealthy("before"))
			Eventually(reportOf(argoNamespace, "outage")).Should(HaveField("Status.Sync.Revision", "before"))

			name := report.ReportName(argoNamespace, "outage")
			errorsBefore, attemptsBefore := writeErrors(), reportWrites(name)
			hubProxy.SetDown(true)
			DeferCleanup(hubProxy.SetDown, false)
			cut := time.Now()
			Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), syncedHealthy("during"))).To(Succeed())
			// The agent tried, failed and tried again: the hub's copy is still the old one
			// because the agent could not write it, not because it did not look.
			Eventually(func() float64 { return writeErrors() - errorsBefore }).Should(BeNumerically(">=", 2), "failed writes with the hub cut off")
			attempts := reportWrites(name) - attemptsBefore
			elapsed := time.Since(cut)
			// With backoff: attempt k comes at least 0.5 s × (2^(k-1) - 1) after the first
			// (pkg/spoke/internal/retry's BaseDelay, doubled each time), so the attempts that fit in
			// the time this outage has lasted are few. A load that slows the agent only makes
			// them fewer; a retry without backoff makes them many.
			const retryBaseDelay = 500 * time.Millisecond
			most := 1 + int(math.Log2(1+float64(elapsed)/float64(retryBaseDelay)))
			Expect(attempts).To(BeNumerically("<=", most), "write attempts in the %s the hub was cut off", elapsed.Round(time.Millisecond))
			Expect(reportOf(argoNamespace, "outage")()).To(HaveField("Status.Sync.Revision", "before"))
			hubProxy.SetDown(false)
			Eventually(reportOf(argoNamespace, "outage"), time.Minute).Should(HaveField("Status.Sync.Revision", "during"))
		})

		It("retries a report that waited for the hub as soon as the hub answers, not after its backoff", func() {
			app := createApplication(pulledApp(argoNamespace, "reconnect").Build(), syncedHealthy("before"))
			Eventually(reportOf(argoNamespace, "reconnect")).Should(HaveField("Status.Sync.Revision", "before"))

			errorsBefore, reconnectsBefore := writeErrors(), hubReconnectRetries()
			hubProxy.SetDown(true)
			DeferCleanup(hubProxy.SetDown, false)
			Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), syncedHealthy("during"))).To(Succeed())
			// Four failed writes: the next retry of the report's own backoff is 4 s away
			// or more (0.5 s doubled each time).
			Eventually(func() float64 { return writeErrors() - errorsBefore }, time.Minute).Should(BeNumerically(">=", 4))
			hubProxy.SetDown(false)
			Eventually(reportOf(argoNamespace, "reconnect"), time.Minute).Should(HaveField("Status.Sync.Revision", "during"))
			// Written by the reconnect's retry, which counts the reports it retried.
			Expect(hubReconnectRetries() - reconnectsBefore).To(BeNumerically(">=", 1))
		})
	})

	Context("with a small hub budget", hubBudgetSpecs)

	Context("after a restart", func() {
		It("deletes the reports of Applications that are gone and refreshes the rest", func() {
			kept := reportOf(argoNamespace, "first")()
			Expect(kept).NotTo(BeNil())
			Expect(theAgent.stop()).To(Succeed())

			// While the agent is down: one Application goes, one changes, and the hub holds
			// a report of an Application that never existed here.
			Expect(managed.Delete(ctx, &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "synced-healthy"}})).To(Succeed())
			Expect(setStatus(ctx, managed, client.ObjectKey{Namespace: argoNamespace, Name: "changing"}, syncedHealthy("three"))).To(Succeed())
			stale := &appsv1alpha1.ApplicationStatusReport{
				ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: report.ReportName(argoNamespace, "never-here"),
					Labels: map[string]string{apps.LabelReportManagedBy: apps.ReportManagedByAgent}},
				Source: appsv1alpha1.ApplicationReportSource{Cluster: clusterName, Namespace: argoNamespace, Name: "never-here",
					HubApplicationNamespace: hubAppNS, HubApplicationName: "never-here"},
				Status: appsv1alpha1.ApplicationReportStatus{ObservedAt: metav1.Now()},
			}
			Expect(hub.Create(ctx, stale)).To(Succeed())

			// This time the agent reads its hub kubeconfig from files, as in a pod.
			kubeconfig, err := writeKubeconfig(GinkgoT().TempDir(), viaProxy(hubServer.Config, hubProxy))
			Expect(err).NotTo(HaveOccurred())
			theAgent = startAgent(func(o *agent.Options) {
				o.HubKubeconfig = kubeconfig
				o.ManagedConfig = rest.CopyConfig(managedServer.Config)
			})

			for _, gone := range []string{"synced-healthy", "never-here"} {
				Eventually(func() bool {
					return apierrors.IsNotFound(hub.Get(ctx, reportKey(argoNamespace, gone), &appsv1alpha1.ApplicationStatusReport{}))
				}).Should(BeTrue(), "report of %s", gone)
			}
			Eventually(reportOf(argoNamespace, "changing")).Should(HaveField("Status.Sync.Revision", "three"))
			Consistently(reportOf(argoNamespace, "first")).Should(HaveField("ResourceVersion", kept.ResourceVersion),
				"an unchanged report is not rewritten")
		})
	})

	Context("the addon lease", func() {
		It("is renewed in the install namespace while the agent is healthy", func() {
			Eventually(func(g Gomega) {
				lease := &coordinationv1.Lease{}
				g.Expect(managed.Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: apps.AddonName}, lease)).To(Succeed())
				g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
				g.Expect(time.Since(lease.Spec.RenewTime.Time)).To(BeNumerically("<", 2*time.Minute))
			}).Should(Succeed())
		})

		// Cutting the hub off must withhold the renewal the agent would otherwise make, with
		// addon-framework's lease updater and its real period: the Lease is seen renewed
		// after a hub check passed, the hub is cut until the updater has made a hub check
		// that failed (so it ran while the hub was gone) and the Lease must not have moved,
		// and once the hub is back it must move again.
		It("is renewed only while the hub answers", func() {
			// The updater runs every 60 s plus up to 25 % jitter, and a run's checks take up to
			// 11 s (1 s for the informers, 10 s for the hub's deadline): the next run comes
			// within 86 s of the last. These are give-up bounds of about two periods; nothing
			// below asserts how long anything took.
			const giveUp = 3 * time.Minute

			// The suite's agent again, so that its updater's first run comes once its caches
			// have synced rather than up to a period after the last one. It is the only agent
			// running in this process now, so the check counter counts its checks alone.
			Expect(theAgent.stop()).To(Succeed())
			hubPassed := leaseChecks("hub", "passed")
			started := time.Now()
			theAgent = startAgent(agentAgainstProxy)
			// Its informers, the report controller's included (it starts once the agent has
			// seen Argo CD's CRD), have synced once it reports a new Application. They stay
			// synced while the hub is cut off, so from then on only the hub check can
			// withhold the Lease.
			createApplication(pulledApp(argoNamespace, "lease-witness").Build(), syncedHealthy("abc"))
			Eventually(reportOf(argoNamespace, "lease-witness")).ShouldNot(BeNil())

			By("renewing the Lease while the hub answers")
			// A hub check of the new agent passed, and the Lease shows a renewal of the new
			// agent (its renew time is this process's clock). Both hold from the first poll
			// after the first renewal, and the next run of the updater comes a period after
			// it: the updater is idle when the hub is cut below.
			Eventually(func(g Gomega) {
				g.Expect(leaseChecks("hub", "passed")).To(BeNumerically(">", hubPassed))
				g.Expect(leaseRenewTime(g)).To(BeTemporally(">", started))
			}).WithTimeout(giveUp).Should(Succeed(), "the restarted agent passes a hub check and renews its Lease")
			renewed := leaseRenewTime(Default)

			By("withholding the renewal while the hub is cut off")
			hubProxy.SetDown(true)
			DeferCleanup(hubProxy.SetDown, false)
			hubPassedAtCut, hubFailedAtCut := leaseChecks("hub", "passed"), leaseChecks("hub", "failed")
			informersFailedAtCut := leaseChecks("informers", "failed")
			// The next run of the updater comes after the cut. The framework makes the hub
			// check only once the informers check passed, and renews only if both passed.
			Eventually(func(g Gomega) {
				if !leaseRenewTime(g).Equal(renewed) {
					StopTrying("the agent renewed its Lease while the hub was cut off").Now()
				}
				if leaseChecks("informers", "failed") > informersFailedAtCut {
					StopTrying("a run of the lease updater stopped at the informers check: the hub check's part cannot be told").Now()
				}
				g.Expect(leaseChecks("hub", "failed")).To(BeNumerically(">", hubFailedAtCut))
			}).WithTimeout(giveUp).Should(Succeed(), "a run of the lease updater made a hub check with the hub cut off, and it failed")
			// That run does not write; runs are sequential, and the next is a period away.
			Expect(leaseRenewTime(Default)).To(BeTemporally("==", renewed), "the Lease after a run of the updater with the hub cut off")
			Expect(leaseChecks("hub", "passed")).To(Equal(hubPassedAtCut), "hub checks that passed with the hub cut off")
			Expect(theAgent.done).NotTo(Receive(), "the agent keeps running while the hub is away")

			By("renewing it again once the hub answers")
			hubProxy.SetDown(false)
			Eventually(func(g Gomega) {
				g.Expect(leaseRenewTime(g)).To(BeTemporally(">", renewed))
			}).WithTimeout(giveUp).Should(Succeed(), "the agent renews its Lease once the hub is back")
			Expect(leaseChecks("hub", "passed")).To(BeNumerically(">", hubPassedAtCut))
		})
	})

	Context("when the hub refuses its report writes", reportRefusalSpecs)

	Context("running the hub's requests", hubRequestSpecs)

	Context("with only the permissions the addon grants it", scopedAgentSpecs)
})

// createApplication creates app on the managed cluster, then writes status the way Argo
// CD does, and returns the Application.
func createApplication(app *argov1alpha1.Application, status argov1alpha1.ApplicationStatus) *argov1alpha1.Application {
	GinkgoHelper()
	Expect(managed.Create(ctx, app)).To(Succeed())
	Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), status)).To(Succeed())
	return app
}

func reportKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: clusterName, Name: report.ReportName(namespace, name)}
}

// reportOf returns a function that reads the hub report of an Application, nil if none.
func reportOf(namespace, name string) func() *appsv1alpha1.ApplicationStatusReport {
	return func() *appsv1alpha1.ApplicationStatusReport {
		rep := &appsv1alpha1.ApplicationStatusReport{}
		if err := hub.Get(ctx, reportKey(namespace, name), rep); err != nil {
			return nil
		}
		return rep
	}
}

// addonCondition is the agent's condition on its ManagedClusterAddOn (zero if not set).
func addonCondition() metav1.Condition {
	mca := managedClusterAddOn()
	if err := hub.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
		return metav1.Condition{}
	}
	if c := meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionApplicationsWatched); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// leaseRenewTime is the renew time of the suite's agent's addon Lease.
func leaseRenewTime(g Gomega) time.Time {
	lease := &coordinationv1.Lease{}
	g.ExpectWithOffset(1, managed.Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: apps.AddonName}, lease)).To(Succeed())
	g.ExpectWithOffset(1, lease.Spec.RenewTime).NotTo(BeNil())
	return lease.Spec.RenewTime.Time
}
