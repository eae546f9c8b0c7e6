package agent_test

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// resourceHealthSpecs: the agent says on its ManagedClusterAddOn whether the cluster's
// Argo CD keeps per-resource health in the Applications, from what the Applications it
// reports say. They run inside the suite's Ordered container, with the suite's agent,
// whose hub writes the suite counts, and before any Application of the suite is marked
// reconciled by Argo CD (only those tell).
func resourceHealthSpecs() {
	// reconciled is status as Argo CD's controller in the argocd namespace writes it after
	// a comparison, with resource health kept where source says.
	reconciled := func(revision string, source argov1alpha1.ResourceHealthLocation) argov1alpha1.ApplicationStatus {
		status := syncedHealthy(revision)
		status.ReconciledAt = &finished
		status.ControllerNamespace = argoNamespace
		status.ResourceHealthSource = source
		if source == argov1alpha1.ResourceHealthLocationAppTree {
			for i := range status.Resources {
				status.Resources[i].Health = nil
			}
		}
		return status
	}

	It("says True once a reported Application shows Argo CD keeps resource health in it", func() {
		createApplication(pulledApp(argoNamespace, "health-inline").Build(), reconciled("abc", argov1alpha1.ResourceHealthLocationInline))
		Eventually(resourceHealthCondition).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", apps.ReasonResourceHealthPersisted),
			HaveField("Message", "Argo CD keeps per-resource health in the Applications: reports carry each resource's health.")))
		Expect(addonCondition()).To(HaveField("Status", metav1.ConditionTrue), "ApplicationsWatched, beside it")
	})

	It("says False, and how to turn persistence on, once one shows Argo CD keeps it in the resource tree", func() {
		createApplication(pulledApp(argoNamespace, "health-tree").Build(), reconciled("abc", argov1alpha1.ResourceHealthLocationAppTree))
		Eventually(reportOf(argoNamespace, "health-tree")).Should(HaveField("Status.ResourceHealthSource", appsv1alpha1.ResourceHealthSourceAppTree))
		Eventually(resourceHealthCondition).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", apps.ReasonResourceHealthInResourceTree),
			HaveField("Message", And(
				ContainSubstring("resourceHealthSource: appTree"),
				ContainSubstring(`set controller.resource.health.persist: "true" in the argocd-cmd-params-cm ConfigMap in namespace argocd`),
				ContainSubstring("restart the application controller")))))
	})

	It("writes the ManagedClusterAddOn only when the condition changes", func() {
		statusWrites := func() int { return writes.Of("managedclusteraddons", apps.AddonName) }
		before := statusWrites()
		Expect(setStatus(ctx, managed, client.ObjectKey{Namespace: argoNamespace, Name: "health-tree"},
			reconciled("def", argov1alpha1.ResourceHealthLocationAppTree))).To(Succeed())
		// The agent saw the change: it wrote the report.
		Eventually(reportOf(argoNamespace, "health-tree")).Should(HaveField("Status.Sync.Revision", "def"))
		Consistently(statusWrites).Should(Equal(before))
		Expect(resourceHealthCondition()).To(HaveField("Status", metav1.ConditionFalse))
	})

	It("says True again once Argo CD keeps resource health in every Application again", func() {
		// Persistence turned on and the application controller restarted: it rewrites each
		// Application's status at its next comparison.
		Expect(setStatus(ctx, managed, client.ObjectKey{Namespace: argoNamespace, Name: "health-tree"},
			reconciled("def", argov1alpha1.ResourceHealthLocationInline))).To(Succeed())
		Eventually(resourceHealthCondition).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", apps.ReasonResourceHealthPersisted)))
		Eventually(reportOf(argoNamespace, "health-tree")).Should(HaveField("Status.ResourceHealthSource", BeEmpty()))
	})
}

// resourceHealthCondition is the agent's ResourceHealthPersisted condition on its
// ManagedClusterAddOn (zero if not set).
func resourceHealthCondition() metav1.Condition {
	mca := managedClusterAddOn()
	if err := hub.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
		return metav1.Condition{}
	}
	if c := meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionResourceHealthPersisted); c != nil {
		return *c
	}
	return metav1.Condition{}
}
