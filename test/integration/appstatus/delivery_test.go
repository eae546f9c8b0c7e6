package appstatus_test

import (
	"context"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appstatus"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The work agent's own messages (ocm v1.2 manifestwork_reconciler.go and objectreader).
const (
	workNotApplied      = "Failed to apply manifest work"
	workApplied         = "Apply manifest work complete"
	manifestApplied     = "Apply manifest complete"
	missingNamespace    = `Failed to apply manifest: namespaces "openshift-gitops" not found`
	watchedNamespaceMsg = "Watching Argo CD Applications in namespaces argocd"
)

// workAgentStatus is what OCM's work agent writes on a ManifestWork: the work's Applied
// condition (since appliedAt), the Application manifest's Applied condition with its
// message, and the feedback.
type workAgentStatus struct {
	applied         metav1.ConditionStatus
	appliedAt       metav1.Time
	manifestMessage string
	feedback        spoke
	// note varies the work's own message, so that a rewrite with the same state still
	// changes the object, as the work agent's resyncs do.
	note string
}

// setWorkStatus writes st onto the ManifestWork's status through the status subresource.
func setWorkStatus(ctx context.Context, mw *workv1.ManifestWork, st workAgentStatus) {
	GinkgoHelper()
	reason := map[metav1.ConditionStatus]string{metav1.ConditionTrue: "AppliedManifestWorkComplete", metav1.ConditionFalse: "AppliedManifestWorkFailed"}
	message := map[metav1.ConditionStatus]string{metav1.ConditionTrue: workApplied, metav1.ConditionFalse: workNotApplied}
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
		cur.Status.Conditions = []metav1.Condition{{
			Type: workv1.WorkApplied, Status: st.applied, Reason: reason[st.applied], Message: message[st.applied] + st.note,
			LastTransitionTime: st.appliedAt, ObservedGeneration: cur.Generation,
		}}
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{
				Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications",
				Name: mw.Annotations[apps.AnnotationHubApplicationName], Namespace: mw.Spec.ManifestConfigs[0].ResourceIdentifier.Namespace,
			},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: st.feedback.values()},
			Conditions: []metav1.Condition{{
				Type: workv1.ManifestApplied, Status: st.applied, Reason: reason[st.applied], Message: st.manifestMessage,
				LastTransitionTime: st.appliedAt, ObservedGeneration: cur.Generation,
			}},
		}}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// deliverTo makes the ManifestWork of app deliver it to namespace on the cluster, as
// propagation does for the ocm-managed-cluster-app-namespace annotation.
func deliverTo(ctx context.Context, app *argov1alpha1.Application, cluster, namespace string) *workv1.ManifestWork {
	GinkgoHelper()
	mw := newManifestWork(app, cluster)
	mw.Spec.ManifestConfigs[0].ResourceIdentifier.Namespace = namespace
	Expect(k8s.Create(ctx, mw)).To(Succeed())
	return mw
}

// setWatched sets the agent's ApplicationsWatched condition on the cluster's addon.
func setWatched(ctx context.Context, cluster, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{
			Type: apps.ConditionApplicationsWatched, Status: metav1.ConditionTrue, Reason: apps.ReasonApplicationsWatched, Message: message,
		})
		g.Expect(k8s.Status().Update(ctx, mca)).To(Succeed())
	}).Should(Succeed())
}

// hubCondition is the hub Application's hub condition of type t; nil when it has none.
func hubCondition(app *argov1alpha1.Application, t argov1alpha1.ApplicationConditionType) *argov1alpha1.ApplicationCondition {
	for _, c := range pullmodel.HubConditions(app.Status.Conditions) {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// warnings counts appstatus' Warning Events of reason on the hub Application, with their
// repeats (the recorder folds identical Events into one with a count).
func warnings(ctx context.Context, g Gomega, app *argov1alpha1.Application, reason string) (n int, messages []string) {
	events := &corev1.EventList{}
	g.Expect(k8s.List(ctx, events, client.InNamespace(app.Namespace))).To(Succeed())
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Application" && e.InvolvedObject.Name == app.Name && e.Type == corev1.EventTypeWarning && e.Reason == reason &&
			e.Source.Component == appstatus.EventSource {
			n += int(max(e.Count, 1))
			messages = append(messages, e.Message)
		}
	}
	return n, messages
}

var _ = Describe("Why a delivered Application does not run", func() {
	It("says the ManifestWork is not applied, with the work agent's message, and records one Warning Event", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		app := createApplication(ctx, builders.Application(cluster+"-nons").Pulled().Cluster(cluster).OwnedBy("nons", appSetUID).
			Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "openshift-gitops").Build())
		mw := deliverTo(ctx, app, cluster, "openshift-gitops")

		By("the work agent cannot apply it: no feedback, no report, yet the hub Application says why")
		failedAt := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
		setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionFalse, appliedAt: failedAt, manifestMessage: missingNamespace})
		Eventually(func(g Gomega) {
			c := hubCondition(getApp(ctx, g, app), pullmodel.ConditionClusterApplyError)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(And(HavePrefix(pullmodel.HubConditionPrefix), ContainSubstring(missingNamespace),
				ContainSubstring(mw.Namespace+"/"+mw.Name)))
			n, messages := warnings(ctx, g, app, string(pullmodel.ConditionClusterApplyError))
			g.Expect(n).To(Equal(1))
			g.Expect(messages[0]).To(ContainSubstring(missingNamespace))
		}).Should(Succeed())

		By("the work agent says the same again and again: no second Event, no write")
		Eventually(framework.Settled(appstatus.ControllerName, time.Second)).Should(BeTrue())
		base := writes.Of("applications", app.Name)
		reconciles := framework.Reconciles(appstatus.ControllerName)
		for i := range 3 {
			setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionFalse, appliedAt: failedAt,
				manifestMessage: missingNamespace, note: strings.Repeat(" ", i+1)})
		}
		// Someone touches the hub Application: this reaches the controller for sure.
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			cur.Annotations["example.com/touched"] = "yes"
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(framework.Reconciles).WithArguments(appstatus.ControllerName).Should(BeNumerically(">", reconciles))
		Eventually(framework.Settled(appstatus.ControllerName, time.Second)).Should(BeTrue())
		Consistently(func(g Gomega) {
			n, _ := warnings(ctx, g, app, string(pullmodel.ConditionClusterApplyError))
			g.Expect(n).To(Equal(1))
		}).Should(Succeed())
		Expect(writes.Of("applications", app.Name)).To(Equal(base))

		By("the namespace is created: applied and reported, the condition goes")
		report := builders.ReportStatus(metav1.Now()).State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "8f3c2b1").Build()
		writeAgentReport(ctx, app, cluster, *report)
		setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionTrue, appliedAt: metav1.Now(), manifestMessage: manifestApplied,
			feedback: spoke{health: "Healthy", sync: "Synced", revision: "8f3c2b1"}})
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(pullmodel.HubConditions(cur.Status.Conditions)).To(BeEmpty())
			g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusHealthy))
		}).Should(Succeed())
		Expect(writes.Of("applications", app.Name)).To(BeNumerically(">", base), "the recovery is written")
	})

	It("says an applied Application was not reported after the grace period, where it went and what the agent watches", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		setWatched(ctx, cluster, watchedNamespaceMsg)
		app := createApplication(ctx, builders.Application(cluster+"-unwatched").Pulled().Cluster(cluster).
			Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "openshift-gitops").Build())
		mw := deliverTo(ctx, app, cluster, "openshift-gitops")

		By("applied now; no agent report: nothing said within the grace period, then NotReportedError")
		setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionTrue, appliedAt: metav1.Now(), manifestMessage: manifestApplied})
		Eventually(func(g Gomega) {
			c := hubCondition(getApp(ctx, g, app), pullmodel.ConditionNotReported)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(And(
				ContainSubstring("cluster "+cluster+" as openshift-gitops/"+app.Name),
				ContainSubstring(watchedNamespaceMsg),
				ContainSubstring("namespace openshift-gitops"),
			))
			n, _ := warnings(ctx, g, app, string(pullmodel.ConditionNotReported))
			g.Expect(n).To(Equal(1))
		}, 4*reportGracePeriod+10*time.Second).Should(Succeed())
		Expect(hubCondition(getApp(ctx, Default, app), pullmodel.ConditionClusterApplyError)).To(BeNil())

		By("the agent is told to watch more: the condition quotes what it says now")
		setWatched(ctx, cluster, watchedNamespaceMsg+", team-a")
		Eventually(func(g Gomega) {
			c := hubCondition(getApp(ctx, g, app), pullmodel.ConditionNotReported)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring(watchedNamespaceMsg + ", team-a"))
		}).Should(Succeed())

		By("the agent reports it: the condition goes")
		writeAgentReport(ctx, app, cluster, *builders.ReportStatus(metav1.Now()).
			State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "8f3c2b1").Build())
		Eventually(func(g Gomega) {
			g.Expect(pullmodel.HubConditions(getApp(ctx, g, app).Status.Conditions)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("says nothing of a missing report while the agent is not available, only that what it shows is stale", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionFalse)
		app := createApplication(ctx, builders.Application(cluster+"-silent").Pulled().Cluster(cluster).Build())
		mw := createManifestWork(ctx, app, cluster)
		setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionTrue, appliedAt: metav1.NewTime(time.Now().Add(-time.Hour)),
			manifestMessage: manifestApplied, feedback: synced})
		expectMirrored(ctx, app, synced)
		Consistently(func(g Gomega) {
			conditions := pullmodel.HubConditions(getApp(ctx, g, app).Status.Conditions)
			g.Expect(conditions).To(ConsistOf(HaveField("Type", pullmodel.ConditionStaleStatus)))
			g.Expect(conditions[0].Message).To(ContainSubstring("no report of the Application from it yet"))
		}, 2*reportGracePeriod).Should(Succeed())
	})

	It("removes what the agent's report said once the report is gone, keeping the feedback and the hub's conditions", func(ctx context.Context) {
		cluster := newCluster(ctx)
		setAgentAvailable(ctx, cluster, metav1.ConditionTrue)
		app := createApplication(ctx, builders.Application(cluster+"-gone").Pulled().Cluster(cluster).OwnedBy("gone", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)
		// Propagation's condition, as it writes it: it must outlive the report.
		invalid := pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, "annotation apps.open-cluster-management.io/destination-server is not a URL")
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			t := metav1.NewTime(time.Now().Truncate(time.Second))
			invalid.LastTransitionTime = &t
			cur.Status.Conditions = []argov1alpha1.ApplicationCondition{invalid}
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())

		By("the agent reports a failed sync with resources, conditions and messages")
		startedAt := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
		failedSync := builders.ReportStatus(metav1.NewTime(startedAt.Add(time.Minute))).
			State(appsv1alpha1.HealthStatusDegraded, "0/1 replicas ready", appsv1alpha1.SyncStatusOutOfSync, "8f3c2b1").
			Operation(appsv1alpha1.OperationFailed, startedAt, metav1.NewTime(startedAt.Add(30*time.Second)), "one or more objects failed to apply").
			Condition("SyncError", "Failed to sync Deployment guestbook/guestbook-ui", startedAt).
			Resource(appsv1alpha1.ResourceStatusReport{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Status: appsv1alpha1.SyncStatusOutOfSync, Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded}}).Build()
		writeAgentReport(ctx, app, cluster, *failedSync)
		fromFeedback := spoke{health: "Degraded", sync: "OutOfSync", revision: "8f3c2b1", phase: "Failed", startedAt: "2026-11-01T10:00:00Z"}
		setWorkStatus(ctx, mw, workAgentStatus{applied: metav1.ConditionTrue, appliedAt: metav1.NewTime(time.Now().Add(-time.Hour)),
			manifestMessage: manifestApplied, feedback: fromFeedback})
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Resources).To(HaveLen(1))
			g.Expect(cur.Status.Conditions).To(ConsistOf(HaveField("Type", "SyncError"), HaveField("Message", invalid.Message)))
			g.Expect(cur.Status.Health.Message).To(Equal("0/1 replicas ready"))
			g.Expect(cur.Status.OperationState).NotTo(BeNil())
			g.Expect(cur.Status.OperationState.Message).To(Equal("one or more objects failed to apply"))
		}).Should(Succeed())

		By("the addon is disabled: its ManagedClusterAddOn goes and garbage collection takes the report")
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		Expect(k8s.Delete(ctx, mca)).To(Succeed())
		Expect(k8s.DeleteAllOf(ctx, &appsv1alpha1.ApplicationStatusReport{}, client.InNamespace(cluster))).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			g.Expect(cur.Status.Resources).To(BeEmpty())
			g.Expect(cur.Status.Conditions).To(HaveExactElements(HaveField("Message", invalid.Message)))
			g.Expect(cur.Status.Health.Message).To(BeEmpty())
			g.Expect(cur.Status.OperationState).NotTo(BeNil())
			g.Expect(cur.Status.OperationState.Message).To(BeEmpty())
			g.Expect(cur.Status.OperationState.FinishedAt).To(BeNil())
		}).Should(Succeed())
		expectMirrored(ctx, app, fromFeedback)
		Consistently(func(g Gomega) {
			g.Expect(hubCondition(getApp(ctx, g, app), pullmodel.ConditionNotReported)).To(BeNil(), "no agent, no report to wait for")
		}, 2*reportGracePeriod).Should(Succeed())
	})
})
