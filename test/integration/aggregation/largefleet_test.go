package aggregation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("The MulticlusterApplicationSetReport of an ApplicationSet on more than 100 clusters", func() {
	It("counts every cluster, lists those that need attention, and is not rewritten when a healthy cluster syncs", func(ctx context.Context) {
		n := appsv1alpha1.ListAllEntriesUpTo + 1
		appSet := createApplicationSet(ctx, fmt.Sprintf("large-%d", seq.Add(1)))
		observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC))
		pulled := make([]*argov1alpha1.Application, n)
		works := make([]*workv1.ManifestWork, n)
		for i := range n {
			cluster := newCluster(ctx)
			pulled[i] = createApplication(ctx, cluster+"-large", cluster, appSet)
			works[i] = createManifestWork(ctx, pulled[i])
			setFeedback(ctx, works[i], healthy, "")
			writeReport(ctx, healthyReport(pulled[i], observed))
		}

		By("every cluster is counted; none needs attention, so none is listed")
		var settled *appsv1alpha1.MulticlusterApplicationSetReport
		Eventually(func(g Gomega) {
			settled = getReport(ctx, g, appSet)
			s := settled.Statuses
			g.Expect(s.Summary.Clusters).To(Equal(fmt.Sprint(n)))
			g.Expect(s.Summary.Healthy).To(Equal(fmt.Sprint(n)))
			g.Expect(s.Summary.Synced).To(Equal(fmt.Sprint(n)))
			g.Expect(s.ClusterConditions).To(BeEmpty())
			g.Expect(s.Truncation).NotTo(BeNil())
			g.Expect(s.Truncation.UnlistedClusterConditions).To(BeEquivalentTo(n))
			g.Expect(s.Resources).To(HaveLen(2))
		}, time.Minute).Should(Succeed())
		Expect(settled.Statuses.Truncation.Message).To(ContainSubstring("kubectl get applicationstatusreports -A -l " + apps.LabelReportApplicationSet))

		By("each cluster's detail is its ApplicationStatusReport, found by the label the report names")
		selector := settled.Labels[appsv1alpha1.LabelHostingApplicationSet]
		Expect(selector).NotTo(BeEmpty())
		details := &appsv1alpha1.ApplicationStatusReportList{}
		Expect(k8s.List(ctx, details, client.MatchingLabels{apps.LabelReportApplicationSet: selector})).To(Succeed())
		Expect(details.Items).To(HaveLen(n))

		// Let the reconciles of the settling events finish before counting.
		Consistently(func(g Gomega) {
			g.Expect(getReport(ctx, g, appSet).ResourceVersion).To(Equal(settled.ResourceVersion))
		}, 2*time.Second).Should(Succeed())
		before := writes.Of("multiclusterapplicationsetreports", appSet.Name)

		By("a healthy cluster syncing a new revision leaves the report as it is")
		newRevision := healthy
		newRevision.revision = "9a4d3c2"
		synced := healthyReport(pulled[7], metav1.NewTime(observed.Add(time.Minute)))
		synced.Status.Sync.Revision = newRevision.revision
		writeReport(ctx, synced)
		setFeedback(ctx, works[7], newRevision, "")
		Consistently(func() int { return writes.Of("multiclusterapplicationsetreports", appSet.Name) }, 4*time.Second).Should(Equal(before))

		By("a cluster that fails is listed with its errors and failing resource, and counted")
		writeReport(ctx, failingReport(pulled[3], metav1.NewTime(observed.Add(2*time.Minute))))
		setFeedback(ctx, works[3], failing, "")
		Eventually(func(g Gomega) {
			s := getReport(ctx, g, appSet).Statuses
			g.Expect(s.Summary.Healthy).To(Equal(fmt.Sprint(n - 1)))
			g.Expect(s.Summary.NotSynced).To(Equal("1"))
			g.Expect(s.ClusterConditions).To(HaveLen(1))
			e := s.ClusterConditions[0]
			g.Expect(e.Cluster).To(Equal(pulled[3].Annotations[apps.AnnotationOCMManagedCluster]))
			g.Expect(e.HealthStatus).To(Equal("Degraded"))
			g.Expect(e.Conditions).To(ContainElement(HaveField("Type", "SyncError")))
			g.Expect(e.FailingResources).To(ContainElement(HaveField("Name", "guestbook-ui")))
			g.Expect(s.Truncation.UnlistedClusterConditions).To(BeEquivalentTo(n - 1))
		}).Should(Succeed())

		By("once it recovers it is unlisted again")
		writeReport(ctx, healthyReport(pulled[3], metav1.NewTime(observed.Add(3*time.Minute))))
		setFeedback(ctx, works[3], healthy, "")
		Eventually(func(g Gomega) {
			s := getReport(ctx, g, appSet).Statuses
			g.Expect(s.Summary.Healthy).To(Equal(fmt.Sprint(n)))
			g.Expect(s.ClusterConditions).To(BeEmpty())
			g.Expect(s.Truncation.UnlistedClusterConditions).To(BeEquivalentTo(n))
		}).Should(Succeed())
	})
})
