package aggregation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// missingNamespace is what OCM's work agent says of an Application manifest whose
// namespace does not exist on the cluster (ocm v1.2 manifestwork_reconciler.go).
const missingNamespace = `Failed to apply manifest: namespaces "openshift-gitops" not found`

// setNotApplied writes what the work agent writes when it cannot apply the Application
// manifest: no feedback, the manifest's and the work's Applied False.
func setNotApplied(ctx context.Context, mw *workv1.ManifestWork) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
		cur.Status.Conditions = []metav1.Condition{{
			Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed",
			Message: "Failed to apply manifest work", LastTransitionTime: metav1.Now(), ObservedGeneration: cur.Generation,
		}}
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications",
				Name: mw.Annotations[apps.AnnotationHubApplicationName], Namespace: "openshift-gitops"},
			Conditions: []metav1.Condition{{
				Type: workv1.ManifestApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestFailed",
				Message: missingNamespace, LastTransitionTime: metav1.Now(), ObservedGeneration: cur.Generation,
			}},
		}}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// setHubConditions replaces the hub Application's conditions, as their writers do.
func setHubConditions(ctx context.Context, app *argov1alpha1.Application, conditions ...argov1alpha1.ApplicationCondition) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := getApp(ctx, g, app)
		cur.Status.Conditions = conditions
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

var _ = Describe("MulticlusterApplicationSetReport: why an Application does not run", func() {
	It("shows the hub's reasons in the entry: a work never applied, and propagation's conditions", func(ctx context.Context) {
		c1, c2 := newCluster(ctx), newCluster(ctx)
		appSet := createApplicationSet(ctx, "reasons-"+c1)
		broken := createApplication(ctx, c1+"-reasons", c1, appSet)
		fine := createApplication(ctx, c2+"-reasons", c2, appSet)
		setFeedback(ctx, createManifestWork(ctx, fine), healthy, "")
		writeReport(ctx, healthyReport(fine, metav1.Now()))

		By("the work agent of the first cluster cannot apply the Application: the entry says so, with its message")
		setNotApplied(ctx, createManifestWork(ctx, broken))
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			e := entryOf(g, report, broken)
			g.Expect(e.Conditions).To(HaveExactElements(And(
				HaveField("Type", pullmodel.ConditionClusterApplyError),
				HaveField("Message", And(HavePrefix(pullmodel.HubConditionPrefix), ContainSubstring(missingNamespace))))))
			g.Expect(e.SyncStatus).To(BeEmpty(), "nothing is known of sync")
			g.Expect(e.HealthStatus).To(BeEmpty(), "nothing is known of health")
			g.Expect(entryOf(g, report, fine).Conditions).To(BeEmpty())
			g.Expect(report.Statuses.Summary.Healthy).To(Equal("1"))
		}).Should(Succeed())

		By("propagation marks the other Application invalid: its entry shows that too, and it goes when fixed")
		invalid := pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, "annotation apps.open-cluster-management.io/destination-server is not a URL")
		at := metav1.NewTime(time.Now().Truncate(time.Second))
		invalid.LastTransitionTime = &at
		setHubConditions(ctx, fine, invalid)
		Eventually(func(g Gomega) {
			e := entryOf(g, getReport(ctx, g, appSet), fine)
			g.Expect(e.Conditions).To(HaveExactElements(appsv1alpha1.Condition{Type: pullmodel.ConditionInvalidSpec, Message: invalid.Message}))
			g.Expect(e.HealthStatus).To(Equal("Healthy"), "the last good work still runs")
		}).Should(Succeed())
		setHubConditions(ctx, fine)
		Eventually(func(g Gomega) {
			g.Expect(entryOf(g, getReport(ctx, g, appSet), fine).Conditions).To(BeEmpty())
		}).Should(Succeed())
	})

	It("has an entry for an Application the hub never delivered, with the hub's reason, until it is deleted", func(ctx context.Context) {
		c1, c2 := newCluster(ctx), newCluster(ctx)
		appSet := createApplicationSet(ctx, "refused-"+c1)
		fine := createApplication(ctx, c1+"-refused", c1, appSet)
		setFeedback(ctx, createManifestWork(ctx, fine), healthy, "")
		refused := createApplication(ctx, c2+"-refused", c2, appSet)

		By("propagation refuses the second Application from the start: no ManifestWork, a hub condition")
		invalid := pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, `label apps.open-cluster-management.io/pull-to-ocm-managed-cluster="True" is not "true" or "false"`)
		at := metav1.NewTime(time.Now().Truncate(time.Second))
		invalid.LastTransitionTime = &at
		setHubConditions(ctx, refused, invalid)
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			e := entryOf(g, report, refused)
			g.Expect(e.Conditions).To(HaveExactElements(appsv1alpha1.Condition{Type: pullmodel.ConditionInvalidSpec, Message: invalid.Message}))
			g.Expect(e.SyncStatus).To(BeEmpty())
			g.Expect(report.Statuses.Summary.Clusters).To(Equal("2"))
			g.Expect(report.Statuses.Summary.Healthy).To(Equal("1"))
			g.Expect(report.Statuses.Summary.NotHealthy).To(Equal("1"))
		}).Should(Succeed())

		By("the refused Application is deleted: its entry goes")
		Expect(k8s.Delete(ctx, refused)).To(Succeed())
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.ClusterConditions).To(HaveLen(1))
			g.Expect(report.Statuses.Summary.Clusters).To(Equal("1"))
		}).Should(Succeed())
	})

	It("says in statuses.truncation how many resources the agents' reports left out", func(ctx context.Context) {
		c1 := newCluster(ctx)
		appSet := createApplicationSet(ctx, "large-"+c1)
		app := createApplication(ctx, c1+"-large", c1, appSet)
		setFeedback(ctx, createManifestWork(ctx, app), healthy, "")

		By("the agent reports 1,000 of the Application's 2,000 resources, its bound")
		rep := healthyReport(app, metav1.Now())
		rep.Status.Resources = nil
		for i := range appsv1alpha1.MaxResources {
			rep.Status.Resources = append(rep.Status.Resources, appsv1alpha1.ResourceStatusReport{
				Version: "v1", Kind: "ConfigMap", Namespace: "large", Name: fmt.Sprintf("cm-%04d", i), Status: appsv1alpha1.SyncStatusSynced,
			})
		}
		rep.Status.Truncation = &appsv1alpha1.Truncation{OmittedResources: 1000}
		writeReport(ctx, rep)
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.Resources).To(HaveLen(1000))
			g.Expect(report.Statuses.Truncation).NotTo(BeNil())
			g.Expect(report.Statuses.Truncation.AgentOmittedResources).To(BeEquivalentTo(1000))
			g.Expect(report.Statuses.Truncation.OmittedResources).To(BeZero())
			g.Expect(report.Statuses.Truncation.Message).To(ContainSubstring("left out 1000 resources"))
		}).Should(Succeed())

		By("the Application shrinks under the bound: the truncation goes")
		rep.Status.Resources = rep.Status.Resources[:10]
		rep.Status.Truncation = nil
		writeReport(ctx, rep)
		Eventually(func(g Gomega) {
			report := getReport(ctx, g, appSet)
			g.Expect(report.Statuses.Resources).To(HaveLen(10))
			g.Expect(report.Statuses.Truncation).To(BeNil())
		}).Should(Succeed())
	})
})
