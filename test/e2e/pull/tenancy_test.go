//go:build e2e

package pull_test

import (
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// Tenancy on the fleet: a team member who may create Applications only in her namespace
// makes the mistakes a team makes on a shared hub, and the hub's admin fixes what is the
// admin's to fix. The scenario uses its own namespace, AppProject, git repository and
// cluster namespaces, and waits at the end until everything it delivered is gone.
const (
	teamNS      = "team-a"
	teamProject = "team-a-e2e"
	teamApp     = "team-a-guestbook"
	teamDestNS  = "team-a-e2e"
	teamAppSet  = "team-a-set"
	teamSetNS   = "team-a-set-e2e"
	// allowedCluster is the one cluster teamProject lets anyone deliver to.
	allowedCluster = "cluster1"
	deniedCluster  = "cluster2"
	cmdParamsCM    = "argocd-cmd-params-cm"
)

var appProjectGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProject"}

var _ = Describe("Tenancy: a team's mistakes on a shared hub", Ordered, func() {
	var (
		alice     client.Client
		repoURL   string
		spoke     client.Client
		delivered *workv1.ManifestWork
	)

	BeforeAll(func(ctx SpecContext) {
		repo, err := fleet.NewGuestbookRepo(filepath.Join(fleetDir, "git", "tenancy"))
		Expect(err).NotTo(HaveOccurred())
		repoURL = repo.URL
		spoke = theFleet.Cluster(allowedCluster).APIServer.Client

		By("letting alice manage Applications in " + teamNS + " and nothing else")
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamNS}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "application-author", Namespace: teamNS},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
					Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: teamNS},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "application-author"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}},
		} {
			Expect(client.IgnoreAlreadyExists(hub.Create(ctx, o))).To(Succeed())
		}
		cfg := rest.CopyConfig(theFleet.Hub.APIServer.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		alice, err = client.New(cfg, client.Options{Scheme: hub.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		By("creating the team's AppProject: the guestbook repository, into team-a-* namespaces of " + allowedCluster + " only")
		project := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"sourceNamespaces": []any{teamNS},
			"sourceRepos":      []any{repoURL},
			"destinations":     []any{map[string]any{"name": allowedCluster, "namespace": "team-a-*"}},
		}}}
		project.SetGroupVersionKind(appProjectGVK)
		project.SetNamespace(argoNS)
		project.SetName(teamProject)
		Expect(hub.Create(ctx, project)).To(Succeed())

		// The specs build on each other; what they make goes once all ran, last made first
		// (clean-ups registered here run after the container's last spec, in reverse).
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hub.Delete(ctx, project))).To(Succeed()) })

		By("the admin creating the project on the clusters too: their Argo CD checks the Application against its own copy")
		for _, c := range []string{allowedCluster, deniedCluster} {
			onCluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
				"sourceRepos":  []any{repoURL},
				"destinations": []any{map[string]any{"server": "https://kubernetes.default.svc", "namespace": "team-a-*"}},
				// CreateNamespace=true creates a cluster-scoped object.
				"clusterResourceWhitelist": []any{map[string]any{"group": "", "kind": "Namespace"}},
			}}}
			onCluster.SetGroupVersionKind(appProjectGVK)
			onCluster.SetNamespace(argoNS)
			onCluster.SetName(teamProject)
			spokeClient := theFleet.Cluster(c).APIServer.Client
			Expect(spokeClient.Create(ctx, onCluster)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(spokeClient.Delete(ctx, onCluster))).To(Succeed()) })
		}
		// The fleet's hub has no argocd-cmd-params-cm: the second spec creates it.
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmdParamsCM, Namespace: argoNS}}))).To(Succeed())
		})
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, &clusterv1beta2.ManagedClusterSetBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: teamNS}}))).To(Succeed())
		})
		DeferCleanup(func(ctx SpecContext) { deletePulledApp(ctx, allowedCluster, teamNS, teamApp) }, NodeTimeout(3*time.Minute))
	})

	It("refuses alice's Application while Argo CD does not accept Applications in her namespace", func(ctx SpecContext) {
		app := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"project":     teamProject,
			"source":      map[string]any{"repoURL": repoURL, "targetRevision": "HEAD", "path": "guestbook"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": teamDestNS},
			"syncPolicy": map[string]any{
				"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"},
			},
		}}}
		app.SetGroupVersionKind(applicationGVK)
		app.SetNamespace(teamNS)
		app.SetName(teamApp)
		app.SetLabels(map[string]string{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"})
		app.SetAnnotations(map[string]string{
			"argocd.argoproj.io/skip-reconcile":                                 "true",
			"apps.open-cluster-management.io/ocm-managed-cluster":               allowedCluster,
			"apps.open-cluster-management.io/ocm-managed-cluster-app-namespace": argoNS,
		})
		app.SetFinalizers([]string{pullmodel.ResourcesFinalizer})
		Expect(alice.Create(ctx, app)).To(Succeed())

		expectTeamAppRefused(ctx, tenancy.ReasonNamespaceNotPermitted,
			"namespace '"+teamNS+"' is not permitted", "application.namespaces of ConfigMap "+argoNS+"/"+cmdParamsCM)
		Consistently(func(g Gomega) {
			g.Expect(worksIn(ctx, g, allowedCluster, teamNS, teamApp)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("refuses it while no ManagedClusterSet is bound to her namespace, which she cannot bind herself", func(ctx SpecContext) {
		By("the admin lets Argo CD accept Applications in " + teamNS + ", as for apps in any namespace")
		Expect(hub.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmdParamsCM, Namespace: argoNS},
			Data: map[string]string{"application.namespaces": teamNS}})).To(Succeed())

		expectTeamAppRefused(ctx, tenancy.ReasonClusterSetNotBound,
			"ManagedCluster "+allowedCluster+" named by annotation", "bound to namespace "+teamNS)

		By("alice trying to bind the global set to her namespace herself")
		binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: teamNS},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}
		err := alice.Create(ctx, binding)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "alice binding a ManagedClusterSet: %v", err)
	})

	It("delivers it, untouched, once the admin binds a set to her namespace", func(ctx SpecContext) {
		// OCM's registration controller marks it Bound, as `clusteradm clusterset bind` relies on.
		Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: teamNS},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(hubConditions(getApp(ctx, g, hub, teamNS, teamApp))).NotTo(ContainElement(HaveKeyWithValue("type", "InvalidSpecError")))
			works := worksIn(ctx, g, allowedCluster, teamNS, teamApp)
			g.Expect(works).To(HaveLen(1))
			delivered = &works[0]
			g.Expect(nested(getApp(ctx, g, spoke, argoNS, teamApp), "status", "sync", "status")).To(Equal("Synced"))
			expectGuestbookOn(ctx, g, spoke, teamDestNS)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("keeps what runs when she retargets to a cluster the project does not allow, and says why", func(ctx SpecContext) {
		retarget(ctx, alice, deniedCluster)
		expectTeamAppRefused(ctx, tenancy.ReasonProjectDestRefused,
			"do not match any of the allowed destinations in project '"+teamProject+"'")
		Consistently(func(g Gomega) {
			works := worksIn(ctx, g, allowedCluster, teamNS, teamApp)
			g.Expect(works).To(HaveLen(1))
			g.Expect(works[0].UID).To(Equal(delivered.UID))
			g.Expect(works[0].Generation).To(Equal(delivered.Generation), "the ManifestWork was rewritten")
			g.Expect(works[0].DeletionTimestamp).To(BeNil())
			g.Expect(worksIn(ctx, g, deniedCluster, teamNS, teamApp)).To(BeEmpty())
			g.Expect(getApp(ctx, g, spoke, argoNS, teamApp).GetDeletionTimestamp()).To(BeNil())
			expectGuestbookOn(ctx, g, spoke, teamDestNS)
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("alice undoing her retarget: the condition goes, the work is as delivered")
		retarget(ctx, alice, allowedCluster)
		Eventually(func(g Gomega) {
			g.Expect(hubConditions(getApp(ctx, g, hub, teamNS, teamApp))).NotTo(ContainElement(HaveKeyWithValue("type", "InvalidSpecError")))
			works := worksIn(ctx, g, allowedCluster, teamNS, teamApp)
			g.Expect(works).To(HaveLen(1))
			g.Expect(works[0].UID).To(Equal(delivered.UID))
			g.Expect(works[0].Generation).To(Equal(delivered.Generation))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("shows an ApplicationSet's refused cluster in its report, while its allowed cluster runs", func(ctx SpecContext) {
		set := readExample(fleet.PullApplicationSetExample)
		set.SetName(teamAppSet)
		Expect(unstructured.SetNestedField(set.Object, []any{map[string]any{"list": map[string]any{
			"elements": []any{map[string]any{"name": allowedCluster}, map[string]any{"name": deniedCluster}},
		}}}, "spec", "generators")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, "{{name}}-"+teamAppSet, "spec", "template", "metadata", "name")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, teamProject, "spec", "template", "spec", "project")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL")).To(Succeed())
		Expect(unstructured.SetNestedField(set.Object, teamSetNS, "spec", "template", "spec", "destination", "namespace")).To(Succeed())
		Expect(hub.Create(ctx, set)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hub.Delete(ctx, set, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
			for _, c := range []string{allowedCluster, deniedCluster} {
				deletePulledApp(ctx, c, argoNS, c+"-"+teamAppSet)
			}
		}, NodeTimeout(4*time.Minute))

		refused := deniedCluster + "-" + teamAppSet
		want := "do not match any of the allowed destinations in project '" + teamProject + "'"
		Eventually(func(g Gomega) {
			r := &appsv1alpha1.MulticlusterApplicationSetReport{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: teamAppSet}, r)).To(Succeed())
			g.Expect(clusterEntry(g, r, deniedCluster).Conditions).To(ContainElement(And(
				HaveField("Type", pullmodel.ConditionInvalidSpec),
				HaveField("Message", ContainSubstring(want)),
			)), "%s", toYAML(r))
			g.Expect(clusterEntry(g, r, allowedCluster).SyncStatus).To(Equal("Synced"), "%s", toYAML(r))
			g.Expect(clusterEntry(g, r, allowedCluster).Conditions).To(BeEmpty(), "%s", toYAML(r))
			g.Expect(r.Statuses.Summary.Clusters).To(Equal("2"))

			g.Expect(hubConditions(getApp(ctx, g, hub, argoNS, refused))).To(ContainElement(And(
				HaveKeyWithValue("type", pullmodel.ConditionInvalidSpec),
				HaveKeyWithValue("message", ContainSubstring(want)),
			)))
			expectWarningEvent(ctx, g, refused, tenancy.ReasonProjectDestRefused, want)
			g.Expect(worksIn(ctx, g, deniedCluster, argoNS, refused)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// expectTeamAppRefused waits for alice's Application to carry an InvalidSpecError whose
// message holds texts and a Warning Event of reason saying texts[0].
func expectTeamAppRefused(ctx SpecContext, reason string, texts ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		msg := And(HavePrefix(pullmodel.HubConditionPrefix))
		for _, t := range texts {
			msg = And(msg, ContainSubstring(t))
		}
		g.Expect(hubConditions(getApp(ctx, g, hub, teamNS, teamApp))).To(ContainElement(And(
			HaveKeyWithValue("type", pullmodel.ConditionInvalidSpec), HaveKeyWithValue("message", msg))))
		g.Expect(warningEventsIn(ctx, g, teamNS, teamApp, reason)).To(ContainElement(ContainSubstring(texts[0])),
			"no Warning %s Event on Application %s/%s", reason, teamNS, teamApp)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// retarget has c (alice) point her Application at cluster.
func retarget(ctx SpecContext, c client.Client, cluster string) {
	GinkgoHelper()
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(applicationGVK)
	app.SetNamespace(teamNS)
	app.SetName(teamApp)
	Expect(c.Patch(ctx, app, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"apps.open-cluster-management.io/ocm-managed-cluster":"`+cluster+`"}}}`)))).To(Succeed())
}
