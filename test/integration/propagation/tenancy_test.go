package propagation_test

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// Who may deliver where, each from the identity that would try it: alice may create
// Applications in namespace team-a and nothing else; the hub's admin (k8s) owns Argo
// CD's configuration, the AppProjects and the cluster set bindings. Whatever alice writes,
// the manager delivers only what Argo CD and OCM would let her use, and once the admin
// allows it, delivers the same Application without anyone touching it: the watches, not
// a timer, bring it back.

const (
	teamNamespace = "team-a"
	teamSet       = "team-a-set"
	otherSet      = "other-set"
)

var _ = Describe("Who may deliver where", Ordered, func() {
	var alice client.Client

	BeforeAll(func(ctx context.Context) {
		ensureNamespace(ctx, teamNamespace)
		By("letting alice manage Applications in team-a only")
		Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "application-author", Namespace: teamNamespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: teamNamespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "application-author"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}})).To(Succeed())
		cfg := rest.CopyConfig(apiServer.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		var err error
		alice, err = client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("creating two exclusive cluster sets and binding only team-a-set to team-a")
		for _, s := range []string{teamSet, otherSet} {
			Expect(k8s.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: s}})).To(Succeed())
		}
		Expect(framework.BindClusterSet(ctx, k8s, teamSet, teamNamespace)).To(Succeed())
	})

	// teamCluster registers a cluster in set.
	teamCluster := func(ctx context.Context, set string) string {
		return newCluster(ctx, map[string]string{clusterv1beta2.ClusterSetLabel: set})
	}
	// teamProject creates, as the admin, an AppProject for team-a's Applications allowing
	// the guestbook repository into namespace guestbook of every clusterN, then edit.
	teamProject := func(ctx context.Context, name string, edit func(*argov1alpha1.AppProjectSpec)) *argov1alpha1.AppProject {
		p := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNamespace},
			Spec: argov1alpha1.AppProjectSpec{SourceNamespaces: []string{teamNamespace}, SourceRepos: []string{builders.GuestbookRepoURL},
				Destinations: []argov1alpha1.ApplicationDestination{{Name: "cluster*", Namespace: builders.GuestbookNamespace}}}}
		if edit != nil {
			edit(&p.Spec)
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed()) })
		return p
	}
	editProject := func(ctx context.Context, p *argov1alpha1.AppProject, edit func(*argov1alpha1.AppProjectSpec)) {
		Eventually(func() error {
			cur := &argov1alpha1.AppProject{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return err
			}
			edit(&cur.Spec)
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
	}
	// aliceApp is what alice creates: a pulled Application in team-a using project.
	aliceApp := func(ctx context.Context, name, project, cluster string) *argov1alpha1.Application {
		app := hubApp(name).Namespace(teamNamespace).Cluster(cluster).Build()
		app.Spec.Project = project
		Expect(alice.Create(ctx, app)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { deleteApp(ctx, client.ObjectKeyFromObject(app)) })
		return app
	}
	// expectRefused: no ManifestWork, an InvalidSpecError and a Warning Event naming the check.
	expectRefused := func(ctx context.Context, app *argov1alpha1.Application, reason string, texts ...string) {
		GinkgoHelper()
		expectCondition(ctx, app, pullmodel.ConditionInvalidSpec, texts...)
		expectEvent(ctx, app, reason, texts[0])
		expectNoWork(ctx, client.ObjectKeyFromObject(app))
	}
	// expectDeliveredUntouched: delivered to cluster, alice's spec as she wrote it.
	expectDeliveredUntouched := func(ctx context.Context, app *argov1alpha1.Application, cluster string) {
		GinkgoHelper()
		Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).Should(BeEmpty())
		cur := getApp(ctx, app)
		expectOnlyWork(ctx, cur, cluster, workName(cur))
		Expect(cur.Spec).To(Equal(app.Spec), "nobody edited the Application")
	}

	It("refuses an Application from a namespace Argo CD does not accept, and delivers it once argocd-cmd-params-cm lists it", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		teamProject(ctx, "team-a-ns", nil)
		app := aliceApp(ctx, "ns-"+c, "team-a-ns", c)
		expectRefused(ctx, app, tenancy.ReasonNamespaceNotPermitted,
			"namespace 'team-a' is not permitted", "application.namespaces of ConfigMap argocd/argocd-cmd-params-cm")

		By("the admin lets Argo CD accept Applications in team-*")
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tenancy.CmdParamsConfigMap, Namespace: appNamespace},
			Data: map[string]string{tenancy.KeyApplicationNamespaces: "team-*"}})).To(Succeed())
		expectDeliveredUntouched(ctx, app, c)
	})

	It("refuses an Application whose AppProject does not exist, and delivers it once the project is created", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		app := aliceApp(ctx, "noproj-"+c, "team-a-late", c)
		expectRefused(ctx, app, tenancy.ReasonProjectNotFound, "Application referencing project team-a-late which does not exist")

		teamProject(ctx, "team-a-late", nil)
		expectDeliveredUntouched(ctx, app, c)
	})

	It("refuses a target cluster whose set is not bound to team-a, and delivers once the admin binds it", func(ctx context.Context) {
		c := teamCluster(ctx, otherSet)
		teamProject(ctx, "team-a-sets", nil)
		app := aliceApp(ctx, "set-"+c, "team-a-sets", c)
		expectRefused(ctx, app, tenancy.ReasonClusterSetNotBound,
			fmt.Sprintf("ManagedCluster %s named by annotation", c), "bound to namespace team-a (bound: team-a-set)")

		By("the admin binds other-set to team-a")
		Expect(framework.BindClusterSet(ctx, k8s, otherSet, teamNamespace)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(k8s.Delete(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: otherSet, Namespace: teamNamespace}})).To(Succeed())
		})
		expectDeliveredUntouched(ctx, app, c)
	})

	It("delivers once the admin moves the target cluster into a set bound to team-a (its labels)", func(ctx context.Context) {
		c := teamCluster(ctx, otherSet)
		teamProject(ctx, "team-a-move", nil)
		app := aliceApp(ctx, "move-"+c, "team-a-move", c)
		expectRefused(ctx, app, tenancy.ReasonClusterSetNotBound, fmt.Sprintf("ManagedCluster %s named by annotation", c))

		mc := &clusterv1.ManagedCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: c}, mc)).To(Succeed())
		mc.Labels[clusterv1beta2.ClusterSetLabel] = teamSet
		Expect(k8s.Update(ctx, mc)).To(Succeed())
		expectDeliveredUntouched(ctx, app, c)
	})

	It("matches the destination as the GitOpsCluster's cluster Secret names it, and follows that Secret", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		server := "https://" + c + ".example.com:6443"
		p := teamProject(ctx, "team-a-server", func(s *argov1alpha1.AppProjectSpec) {
			s.Destinations = []argov1alpha1.ApplicationDestination{{Server: server, Namespace: builders.GuestbookNamespace}}
		})
		app := aliceApp(ctx, "server-"+c, p.Name, c)
		By("without a cluster Secret, the server is the pull model's placeholder, which the project does not allow")
		expectRefused(ctx, app, tenancy.ReasonProjectDestRefused, fmt.Sprintf("(server 'https://%s-control-plane'", c))

		By("the cluster Secret a GitOpsCluster registers names the server the project allows")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: apps.ClusterSecretName(c), Namespace: appNamespace,
			Labels: map[string]string{apps.LabelArgoSecretType: "cluster", apps.LabelManagedBy: apps.ManagedByValue}},
			Data: map[string][]byte{"name": []byte(c), "server": []byte(server)}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, secret)).To(Succeed()) })
		expectDeliveredUntouched(ctx, app, c)
	})

	It("refuses a destination the project does not allow, and delivers once the project allows it", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		p := teamProject(ctx, "team-a-dest", func(s *argov1alpha1.AppProjectSpec) {
			s.Destinations = []argov1alpha1.ApplicationDestination{{Name: "elsewhere", Namespace: "*"}}
		})
		app := aliceApp(ctx, "dest-"+c, p.Name, c)
		expectRefused(ctx, app, tenancy.ReasonProjectDestRefused,
			fmt.Sprintf("application destination name '%s' (server 'https://%s-control-plane'", c, c),
			"do not match any of the allowed destinations in project 'team-a-dest'")

		editProject(ctx, p, func(s *argov1alpha1.AppProjectSpec) {
			s.Destinations = append(s.Destinations, argov1alpha1.ApplicationDestination{Name: c, Namespace: builders.GuestbookNamespace})
		})
		expectDeliveredUntouched(ctx, app, c)
	})

	It("refuses a repository the project does not allow, and delivers once the project allows it", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		p := teamProject(ctx, "team-a-repo", func(s *argov1alpha1.AppProjectSpec) { s.SourceRepos = []string{"https://example.com/*"} })
		app := aliceApp(ctx, "repo-"+c, p.Name, c)
		expectRefused(ctx, app, tenancy.ReasonProjectRepoRefused,
			"application repo "+builders.GuestbookRepoURL+" is not permitted in project 'team-a-repo'")

		editProject(ctx, p, func(s *argov1alpha1.AppProjectSpec) { s.SourceRepos = append(s.SourceRepos, builders.GuestbookRepoURL) })
		expectDeliveredUntouched(ctx, app, c)
	})

	It("refuses a namespace the project does not list in sourceNamespaces", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		p := teamProject(ctx, "team-b-only", func(s *argov1alpha1.AppProjectSpec) { s.SourceNamespaces = []string{"team-b"} })
		app := aliceApp(ctx, "srcns-"+c, p.Name, c)
		expectRefused(ctx, app, tenancy.ReasonProjectNamespaceRefused,
			"application '"+app.Name+"' in namespace 'team-a' is not allowed to use project team-b-only")
	})

	It("keeps a delivered ManifestWork exactly as it was when the project later forbids it", func(ctx context.Context) {
		c := teamCluster(ctx, teamSet)
		p := teamProject(ctx, "team-a-later", nil)
		app := aliceApp(ctx, "later-"+c, p.Name, c)
		var w *workv1.ManifestWork
		Eventually(func() []argov1alpha1.ApplicationCondition { return propagationConditions(ctx, app) }).Should(BeEmpty())
		w = expectOnlyWork(ctx, app, c, workName(getApp(ctx, app)))

		By("the admin removes the repository from the project")
		editProject(ctx, p, func(s *argov1alpha1.AppProjectSpec) { s.SourceRepos = []string{"https://example.com/*"} })
		expectCondition(ctx, app, pullmodel.ConditionInvalidSpec, "is not permitted in project 'team-a-later'",
			fmt.Sprintf("The ManifestWork %s/%s delivered before is kept unchanged", c, w.Name))
		expectEvent(ctx, app, tenancy.ReasonProjectRepoRefused, "is not permitted in project 'team-a-later'")
		expectUntouched(ctx, w)
	})
})
