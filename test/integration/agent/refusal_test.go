package agent_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
)

// refusedWritesMessage is what the hub's admission policy answers the agent's report writes.
const refusedWritesMessage = "the reports of this cluster are frozen"

// reportRefusalSpecs: when the hub refuses every report write of the agent, the agent
// stops renewing its addon lease, so the hub stops trusting the reports it holds; once
// the hub takes the writes again, the lease is renewed again. The refusal is the hub's
// own: a ValidatingAdmissionPolicy denying writes of reports in the cluster namespace,
// as a policy bounding report shape would refuse an oversized one. They run inside the
// suite's Ordered container, while the suite's agent is the only one in the process (the
// check counter then counts its checks alone).
func reportRefusalSpecs() {
	It("withholds the lease while the hub refuses every report write, and renews it once the hub takes them", func() {
		// The updater runs every 60 s plus up to 25 % jitter, and a run's checks take up to
		// 11 s: the next run comes within 86 s of the last. These are give-up bounds of
		// about two periods; nothing below asserts how long anything took.
		const giveUp = 3 * time.Minute

		// The suite's agent again, with a grace shorter than a lease period, so the first
		// run after the refusal already counts it. It is restored as it was afterwards.
		Expect(theAgent.stop()).To(Succeed())
		theAgent = startAgent(func(o *agent.Options) {
			agentAgainstProxy(o)
			o.ReportFailureGrace = 5 * time.Second
		})
		DeferCleanup(func() {
			Expect(theAgent.stop()).To(Succeed())
			theAgent = startAgent(agentAgainstProxy)
		})
		app := createApplication(pulledApp(argoNamespace, "refused").Build(), syncedHealthy("before"))
		Eventually(reportOf(argoNamespace, "refused")).Should(HaveField("Status.Sync.Revision", "before"))

		By("refusing the agent's report writes on the hub")
		refuseReportWrites()
		errorsBefore := writeErrors()
		reportsFailed := leaseChecks("reports", "failed")
		Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), syncedHealthy("during"))).To(Succeed())
		Eventually(func() float64 { return writeErrors() - errorsBefore }).Should(BeNumerically(">=", 1), "report writes the hub refused")

		By("withholding the renewal once the writes have failed past the grace")
		// A run of the updater counts the reports check only after the informers and hub
		// checks passed: from then on the reports check alone withholds the Lease. A run
		// that failed it wrote nothing, and the runs before it are over, so the Lease shows
		// the last renewal until the next run.
		Eventually(func() float64 { return leaseChecks("reports", "failed") }).WithTimeout(giveUp).
			Should(BeNumerically(">", reportsFailed), "a run of the lease updater failed the reports check")
		renewed := leaseRenewTime(Default)
		reportsFailed = leaseChecks("reports", "failed")
		// Across a renewal period: the next run fails it too, and the Lease has not moved.
		Eventually(func(g Gomega) {
			if !leaseRenewTime(g).Equal(renewed) {
				StopTrying("the agent renewed its Lease while the hub refused every report write").Now()
			}
			g.Expect(leaseChecks("reports", "failed")).To(BeNumerically(">", reportsFailed))
		}).WithTimeout(giveUp).Should(Succeed(), "the next run of the lease updater failed the reports check too")
		Expect(leaseRenewTime(Default)).To(BeTemporally("==", renewed), "the Lease after two runs with the report writes refused")
		Expect(reportOf(argoNamespace, "refused")()).To(HaveField("Status.Sync.Revision", "before"))
		Expect(theAgent.done).NotTo(Receive(), "the agent keeps running while the hub refuses its writes")

		By("renewing it again once the hub takes the writes")
		reportsPassed := leaseChecks("reports", "passed")
		takeReportWrites()
		// A change brings the retry forward from its backoff.
		Expect(setStatus(ctx, managed, client.ObjectKeyFromObject(app), syncedHealthy("after"))).To(Succeed())
		Eventually(reportOf(argoNamespace, "refused")).WithTimeout(giveUp).Should(HaveField("Status.Sync.Revision", "after"))
		Eventually(func(g Gomega) {
			g.Expect(leaseRenewTime(g)).To(BeTemporally(">", renewed))
		}).WithTimeout(giveUp).Should(Succeed(), "the agent renews its Lease once the hub takes its writes")
		Expect(leaseChecks("reports", "passed")).To(BeNumerically(">", reportsPassed))
	})
}

// refusingPolicy is the name of the admission policy and binding that refuse report writes.
const refusingPolicy = "refuse-cluster1-reports"

// refuseReportWrites makes the hub refuse every create and update of a report in the
// suite cluster's namespace, whoever sends it, and waits until it does.
func refuseReportWrites() {
	GinkgoHelper()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: refusingPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: clusterName}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{appsv1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
							Resources: []string{"applicationstatusreports"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: refusedWritesMessage}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: refusingPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        refusingPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(hub.Create(ctx, policy)).To(Succeed())
	Expect(hub.Create(ctx, binding)).To(Succeed())
	DeferCleanup(takeReportWrites)
	// The API server learns policies through an informer: wait until it applies this one.
	Eventually(func() error { return hub.Create(ctx, probeReport(), client.DryRunAll) }).
		Should(MatchError(ContainSubstring(refusedWritesMessage)))
}

// takeReportWrites removes what refuseReportWrites created and waits until the hub takes
// report writes again.
func takeReportWrites() {
	GinkgoHelper()
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: refusingPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: refusingPolicy}},
	} {
		Expect(client.IgnoreNotFound(hub.Delete(ctx, obj))).To(Succeed())
	}
	Eventually(func() error { return hub.Create(ctx, probeReport(), client.DryRunAll) }).Should(Succeed())
}

// probeReport is a valid report in the suite cluster's namespace, for dry-run creates that
// show whether the hub takes report writes; it is never stored.
func probeReport() *appsv1alpha1.ApplicationStatusReport {
	return &appsv1alpha1.ApplicationStatusReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: report.ReportName(argoNamespace, "probe"),
			Labels: map[string]string{apps.LabelReportManagedBy: "probe"}},
		Source: appsv1alpha1.ApplicationReportSource{Cluster: clusterName, Namespace: argoNamespace, Name: "probe",
			HubApplicationNamespace: hubAppNS, HubApplicationName: "probe"},
		Status: appsv1alpha1.ApplicationReportStatus{ObservedAt: metav1.Now()},
	}
}
