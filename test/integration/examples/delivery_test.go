package examples_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	teamNamespace = "team-a"
	teamCluster   = "cluster1"
	otherCluster  = "cluster2"
)

// deliveryChecks runs the hub's propagation controller, with its default tenancy checks,
// over the applied examples and what their READMEs ask of the platform team besides:
// cluster1 labelled for team-a's set, team-a accepted by Argo CD. OCM's registration does
// not run on a bare API server, so the bindings are marked Bound here as it would.
func deliveryChecks(ctx context.Context) {
	GinkgoHelper()
	By("doing what examples/README.md asks besides the files: the label and the accepted namespace")
	mc := &clusterv1.ManagedCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: teamCluster}, mc)).To(Succeed())
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels[teamNamespace] = "true"
	Expect(k8s.Patch(ctx, mc, patch)).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: tenancy.CmdParamsConfigMap, Namespace: "argocd"},
		Data:       map[string]string{tenancy.KeyApplicationNamespaces: teamNamespace},
	})).To(Succeed())
	for _, b := range []struct{ set, namespace string }{{"default", "argocd"}, {framework.GlobalClusterSet, "argocd"}, {teamNamespace, teamNamespace}} {
		Expect(framework.BindClusterSet(ctx, k8s, b.set, b.namespace)).To(Succeed())
	}

	By("refusing the team's Application from another repository, into another namespace, to a cluster outside its set")
	refused := map[string]string{
		"team-a-other-repo":      "is not permitted in project 'team-a'",
		"team-a-other-namespace": "do not match any of the allowed destinations in project 'team-a'",
		"team-a-other-cluster":   "is in no ManagedClusterSet bound to namespace team-a",
	}
	for name := range refused {
		app, err := framework.ReadExample("tenant/07-application-guestbook.yaml")
		Expect(err).NotTo(HaveOccurred())
		app.SetName(name)
		switch name {
		case "team-a-other-repo":
			Expect(unstructured.SetNestedField(app.Object, "https://github.com/example/not-the-teams.git", "spec", "source", "repoURL")).To(Succeed())
		case "team-a-other-namespace":
			Expect(unstructured.SetNestedField(app.Object, "kube-system", "spec", "destination", "namespace")).To(Succeed())
		case "team-a-other-cluster":
			annotations := app.GetAnnotations()
			annotations[apps.AnnotationOCMManagedCluster] = otherCluster
			app.SetAnnotations(annotations)
		}
		Expect(k8s.Create(ctx, app)).To(Succeed(), name)
	}

	stop, err := framework.RunManager(apiServer.Config, apiServer.Scheme, func(mgr ctrl.Manager) error {
		return framework.SetupHubControllers(mgr, propagation.ControllerName)
	})
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(stop()).To(Succeed()) }()

	By("delivering examples/application's and examples/tenant's Applications to cluster1")
	Eventually(func(g Gomega) {
		g.Expect(deliveredTo(ctx, g, teamCluster)).To(ConsistOf(
			"argocd/cluster1-guestbook-standalone",
			teamNamespace+"/team-a-guestbook",
		))
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

	Eventually(func(g Gomega) {
		for name, message := range refused {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("Application"))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: name}, app)).To(Succeed())
			conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
			g.Expect(conditions).To(ContainElement(And(
				HaveKeyWithValue("type", string(pullmodel.ConditionInvalidSpec)),
				HaveKeyWithValue("message", ContainSubstring(message)),
			)), name)
		}
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	Consistently(func(g Gomega) {
		for _, c := range []string{teamCluster, otherCluster} {
			g.Expect(deliveredTo(ctx, g, c)).NotTo(ContainElements(
				teamNamespace+"/team-a-other-repo", teamNamespace+"/team-a-other-namespace", teamNamespace+"/team-a-other-cluster"))
		}
	}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
}

// deliveredTo lists the hub Applications (namespace/name) that have a ManifestWork in
// cluster's namespace.
func deliveredTo(ctx context.Context, g Gomega, cluster string) []string {
	works := &workv1.ManifestWorkList{}
	g.Expect(k8s.List(ctx, works, client.InNamespace(cluster))).To(Succeed())
	var out []string
	for _, w := range works.Items {
		out = append(out, w.Annotations[apps.AnnotationHubApplicationNamespace]+"/"+w.Annotations[apps.AnnotationHubApplicationName])
	}
	return out
}
