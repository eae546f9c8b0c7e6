package chart_test

import (
	"context"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func createCluster(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	Expect(k8s.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
}

func renderedDeployment() *appsv1.Deployment {
	GinkgoHelper()
	return deploymentOf(rendered)
}

// deploymentOf returns the one Deployment among a rendering's objects: the manager's.
func deploymentOf(objects []*unstructured.Unstructured) *appsv1.Deployment {
	GinkgoHelper()
	for _, o := range objects {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
			return d
		}
	}
	Fail("the chart renders no Deployment")
	return nil
}

var _ = Describe("The hub chart", func() {
	It("starts the manager with flags the binary accepts, as the chart's ServiceAccount", func() {
		d := renderedDeployment()
		Expect(d.Namespace).To(Equal(framework.ChartNamespace))
		Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(framework.ChartName + "-manager"))
		c := d.Spec.Template.Spec.Containers[0]
		Expect(c.Args[0]).To(Equal("manager"))
		cmd := managerCommand()
		Expect(cmd.ParseFlags(c.Args[1:])).To(Succeed(), "args: %v", c.Args)
		Expect(cmd.Flags().Lookup("agent-image").Value.String()).To(Equal(c.Image),
			"the agent runs the manager's image")
		Expect(cmd.Flags().Lookup("leader-elect").Value.String()).To(Equal("true"))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(cmd.Flags().Lookup("health-probe-bind-address").Value.String()).To(Equal(":8081"))
	})

	It("pulls the image with imagePullSecrets and names them to the agents it installs", func(ctx context.Context) {
		By("naming none by default")
		c := renderedDeployment().Spec.Template.Spec.Containers[0]
		Expect(renderedDeployment().Spec.Template.Spec.ImagePullSecrets).To(BeEmpty())
		cmd := managerCommand()
		Expect(cmd.ParseFlags(c.Args[1:])).To(Succeed())
		Expect(cmd.Flags().GetStringSlice("agent-image-pull-secrets")).To(BeEmpty())

		By("rendering the chart with two Secrets")
		objects, err := framework.RenderChart(framework.ChartNamespace, map[string]any{
			"imagePullSecrets": []any{map[string]any{"name": "regcred"}, map[string]any{"name": "mirror-creds"}},
		})
		Expect(err).NotTo(HaveOccurred())
		d := deploymentOf(objects)
		Expect(d.Spec.Template.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror-creds"}}))
		cmd = managerCommand()
		Expect(cmd.ParseFlags(d.Spec.Template.Spec.Containers[0].Args[1:])).To(Succeed())
		Expect(cmd.Flags().GetStringSlice("agent-image-pull-secrets")).To(Equal([]string{"regcred", "mirror-creds"}),
			"the manager gives the agents the same Secret names (test/integration/addon checks the agent's Deployment)")
		d.Name = "pull-secrets-check"
		Expect(k8s.Create(ctx, d, client.DryRunAll)).To(Succeed(), "the API server accepts the Deployment")

		By("refusing an entry without a name: the values schema does, before the template's own check")
		_, err = framework.RenderChart(framework.ChartNamespace, map[string]any{
			"imagePullSecrets": []any{map[string]any{"secret": "regcred"}},
		})
		Expect(err).To(MatchError(SatisfyAll(ContainSubstring("/imagePullSecrets/0"), ContainSubstring("missing property 'name'"))))
	})

	It("gives Go's collector 90 % of the manager container's memory limit as its soft limit", func() {
		c := renderedDeployment().Spec.Template.Spec.Containers[0]
		Expect(c.Resources.Limits.Memory().IsZero()).To(BeFalse(), "the chart sets a memory limit by default")
		want := fmt.Sprintf("%dMiB", c.Resources.Limits.Memory().Value()*9/10/(1<<20))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", Value: want}))
	})

	It("lets the manager take the leader Lease in its namespace", func(ctx context.Context) {
		Eventually(func(g Gomega) string {
			lease := &coordinationv1.Lease{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: "argocd-pull-addon-manager"}, lease)).To(Succeed())
			return ptr.Deref(lease.Spec.HolderIdentity, "")
		}, timeout, interval).ShouldNot(BeEmpty())
	})

	It("lets the manager propagate an Application, mirror its status and release its finalizer", func(ctx context.Context) {
		createCluster(ctx, "chart-c1")
		// The default project and a bound cluster set, which the manager's default tenancy
		// checks read through the chart's RBAC.
		Expect(framework.AllowEveryDelivery(ctx, k8s, framework.ChartNamespace)).To(Succeed())
		app := builders.Application("guestbook").Namespace(framework.ChartNamespace).Pulled().Cluster("chart-c1").
			Finalizer("resources-finalizer.argocd.argoproj.io").Build()
		Expect(k8s.Create(ctx, app)).To(Succeed())

		var mw workv1.ManifestWork
		Eventually(func(g Gomega) {
			var list workv1.ManifestWorkList
			g.Expect(k8s.List(ctx, &list, client.InNamespace("chart-c1"))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			mw = list.Items[0]
		}, timeout, interval).Should(Succeed())

		By("mirroring the work agent's feedback onto the hub Application")
		Eventually(func(g Gomega) {
			cur := &workv1.ManifestWork{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&mw), cur)).To(Succeed())
			cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application",
					Resource: "applications", Name: app.Name, Namespace: framework.ChartNamespace},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					{Name: pullmodel.FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Healthy")}},
					{Name: pullmodel.FeedbackSyncStatus, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Synced")}},
				}},
				Conditions: []metav1.Condition{},
			}}
			g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := &argov1alpha1.Application{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
			g.Expect(string(cur.Status.Health.Status)).To(Equal("Healthy"))
			g.Expect(string(cur.Status.Sync.Status)).To(Equal("Synced"))
		}, timeout, interval).Should(Succeed())

		By("deleting the ManifestWork and then releasing the resources finalizer")
		Expect(k8s.Delete(ctx, app)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(app), &argov1alpha1.Application{}))
		}, timeout, interval).Should(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&mw), &workv1.ManifestWork{}))).To(BeTrue())
	})

	It("lets the manager register a GitOpsCluster's clusters with Argo CD", func(ctx context.Context) {
		createCluster(ctx, "chart-c2")
		ns := framework.ChartNamespace
		Expect(k8s.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}})).To(Succeed())
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all-decision-1",
			Labels: map[string]string{clusterv1beta1.PlacementLabel: "all"}}}
		Expect(k8s.Create(ctx, pd)).To(Succeed())
		pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "chart-c2"}}
		Expect(k8s.Status().Update(ctx, pd)).To(Succeed())
		gc := &appsv1beta1.GitOpsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitops"},
			Spec: appsv1beta1.GitOpsClusterSpec{
				ArgoServer:                appsv1beta1.ArgoServerSpec{ArgoNamespace: ns},
				PlacementRef:              &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: "all"},
				CreateBlankClusterSecrets: ptr.To(true),
			},
		}
		Expect(k8s.Create(ctx, gc)).To(Succeed())
		Eventually(func(g Gomega) string {
			cur := &appsv1beta1.GitOpsCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gc), cur)).To(Succeed())
			return cur.Status.Phase
		}, timeout, interval).Should(Equal(appsv1beta1.PhaseSuccessful))
		// The GitOpsCluster can be successful before the decision's status reaches the
		// manager's cache (with no cluster yet); the Secret follows that update.
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "chart-c2-cluster-secret"}, &corev1.Secret{})
		}, timeout, interval).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ocm-placement-generator"}, &corev1.ConfigMap{})).To(Succeed())

		By("letting go of its cluster Secrets when it is deleted")
		Expect(k8s.Delete(ctx, gc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "chart-c2-cluster-secret"}, &corev1.Secret{}))
		}, timeout, interval).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(gc), &appsv1beta1.GitOpsCluster{}))
		}, timeout, interval).Should(BeTrue())
	})
})
