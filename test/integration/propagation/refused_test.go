package propagation_test

import (
	"context"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
)

// The hub refusing a ManifestWork (an admission policy or webhook, a terminating
// namespace) is reported on the Application, keeps what was delivered, and is not retried
// on a timer: the next change of the Application tries again.

const (
	refusalPolicy  = "test-refuse-manifestworks"
	refusalLabel   = "test.argocd-pull/refuse-manifestworks"
	refusalMessage = "this hub's policy refuses ManifestWorks in this namespace"
)

// ensureRefusalPolicy installs an admission policy that refuses every ManifestWork create
// and update in a namespace labelled refusalLabel, as a webhook of the hub's admin would.
func ensureRefusalPolicy(ctx context.Context) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{refusalLabel: "true"}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{workv1.GroupName}, APIVersions: []string{"*"}, Resources: []string{"manifestworks"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: refusalMessage}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        refusalPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
}

// probeWork is a ManifestWork to try (dry run) whether namespace accepts one.
func probeWork(namespace string) *workv1.ManifestWork {
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":"default"}}`)
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: namespace},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}},
		}},
	}
}

// refuseWorks makes the API server refuse ManifestWork writes in namespace, waits until it
// does, and returns the function that lifts the refusal (and waits until it is lifted).
func refuseWorks(ctx context.Context, namespace string) (lift func()) {
	GinkgoHelper()
	ensureRefusalPolicy(ctx)
	setLabel := func(value *string) {
		GinkgoHelper()
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: namespace}, ns)).To(Succeed())
		patch := client.MergeFrom(ns.DeepCopy())
		if value == nil {
			delete(ns.Labels, refusalLabel)
		} else {
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[refusalLabel] = *value
		}
		Expect(k8s.Patch(ctx, ns, patch)).To(Succeed())
	}
	setLabel(ptr.To("true"))
	Eventually(func() error { return k8s.Create(ctx, probeWork(namespace), client.DryRunAll) }).
		Should(MatchError(ContainSubstring(refusalMessage)))
	return func() {
		GinkgoHelper()
		setLabel(nil)
		Eventually(func() error { return k8s.Create(ctx, probeWork(namespace), client.DryRunAll) }).Should(Succeed())
	}
}

func touch(revision string) func(*argov1alpha1.Application) {
	return func(a *argov1alpha1.Application) { a.Spec.Source.TargetRevision = revision }
}

var _ = Describe("The hub refusing a ManifestWork", func() {
	It("is reported when it refuses an update, which keeps the work; the next change delivers", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		app := createApp(ctx, hubApp("update-refused").Cluster(c).Build())
		w := expectOnlyWork(ctx, app, c, workName(app))
		lift := refuseWorks(ctx, c)

		editApp(ctx, app, touch("v2"))
		refused := fmt.Sprintf("the hub refused the ManifestWork %s/%s", c, w.Name)
		expectCondition(ctx, app, pullmodel.ConditionDeliveryError, refused, refusalMessage, "kept unchanged")
		expectEvent(ctx, app, propagation.ReasonManifestWorkRefused, refusalMessage)
		expectUntouched(ctx, w)

		lift()
		editApp(ctx, app, touch("v3"))
		expectDelivered(ctx, app, c, "v3")
	})

	It("is reported when a terminating namespace refuses the create, without retrying it on a timer", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})).To(Succeed())
		// No namespace controller runs: the namespace stays terminating.
		Eventually(func(g Gomega) corev1.NamespacePhase {
			ns := &corev1.Namespace{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: c}, ns)).To(Succeed())
			return ns.Status.Phase
		}).Should(Equal(corev1.NamespaceTerminating))

		app := createApp(ctx, hubApp("namespace-terminating").Cluster(c).Build())
		expectCondition(ctx, app, pullmodel.ConditionDeliveryError, "the hub refused the ManifestWork", "is being terminated")
		expectEvent(ctx, app, propagation.ReasonManifestWorkRefused, "is being terminated")
		Expect(propagationConditions(ctx, app)[0].Message).NotTo(ContainSubstring("kept unchanged"))
		// Writing the condition brings the Application back once, and that reconcile tries
		// the create once more; a retry with backoff would try again and again.
		tried := writes.InNamespace(c)
		Consistently(func() int { return writes.InNamespace(c) }).Should(BeNumerically("<=", tried+1))
		expectNoWork(ctx, client.ObjectKeyFromObject(app))
	})

	It("keeps the old work of a valid retarget until the new one exists", func(ctx context.Context) {
		c1, c2 := newCluster(ctx, nil), newCluster(ctx, nil)
		app := createApp(ctx, hubApp("retarget-refused").Cluster(c1).Build())
		old := expectOnlyWork(ctx, app, c1, workName(app))
		lift := refuseWorks(ctx, c2)

		editApp(ctx, app, func(a *argov1alpha1.Application) { a.Annotations[apps.AnnotationOCMManagedCluster] = c2 })
		expectCondition(ctx, app, pullmodel.ConditionDeliveryError,
			fmt.Sprintf("the hub refused the ManifestWork %s/%s", c2, old.Name), refusalMessage,
			fmt.Sprintf("The ManifestWork %s/%s delivered before is kept unchanged", c1, old.Name))
		expectUntouched(ctx, old)

		lift()
		editApp(ctx, app, touch("v2"))
		expectDelivered(ctx, app, c2, "v2")
	})

	It("keeps the work of a recreated Application until the new Application's work exists", func(ctx context.Context) {
		c := newCluster(ctx, nil)
		first := createApp(ctx, hubApp("recreated-refused").Cluster(c).Build())
		old := expectOnlyWork(ctx, first, c, workName(first))

		// Recreated while the manager is down, it finds the first Application's work.
		stopMgr()
		Expect(k8s.Delete(ctx, getApp(ctx, first))).To(Succeed())
		app := createApp(ctx, hubApp("recreated-refused").Cluster(c).Build())
		Expect(app.UID).NotTo(Equal(first.UID))
		lift := refuseWorks(ctx, c)
		stopMgr = startManager()

		expectCondition(ctx, app, pullmodel.ConditionDeliveryError,
			fmt.Sprintf("the hub refused the ManifestWork %s/%s", c, workName(app)),
			fmt.Sprintf("The ManifestWork %s/%s delivered before is kept unchanged", c, old.Name))
		expectUntouched(ctx, old)

		lift()
		editApp(ctx, app, touch("v2"))
		expectDelivered(ctx, app, c, "v2")
	})
})
