package addon_test

import (
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
)

// agentMay asks the API server whether cluster's addon agent may do attrs.
func agentMay(ctx SpecContext, cluster string, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               agent.DefaultUser(cluster, apps.AddonName, addon.AgentName),
		Groups:             agent.DefaultGroups(cluster, apps.AddonName),
		ResourceAttributes: &attrs,
	}}
	Expect(k8s.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}

// treeOf is a one-Deployment resource tree of the Application name.
func treeOf(name string) *argov1alpha1.ApplicationTree {
	return &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{{ResourceRef: argov1alpha1.ResourceRef{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: name[:min(len(name), 60)], UID: "uid-deployment"}}}}
}

// pulledApplication is Application argocd/name on cluster as the agent sees it after the
// hub delivered it.
func pulledApplication(name string) *argov1alpha1.Application {
	return &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name, UID: types.UID("uid-" + name[:min(len(name), 8)]),
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: "team-a",
				apps.AnnotationHubApplicationName:      name,
			}},
	}
}

var _ = Describe("A cluster's agent identity on the hub", Ordered, func() {
	var cluster, other string

	BeforeAll(func(ctx SpecContext) {
		cluster, other = unique("sec-a"), unique("sec-b")
		for _, c := range []string{cluster, other} {
			createCluster(ctx, c)
			enableAddon(ctx, c, "")
			waitForHubRoleBinding(ctx, c)
		}
		// The API server's authorizer follows new bindings within moments.
		Eventually(func(g Gomega, ctx SpecContext) {
			g.Expect(agentMay(ctx, cluster, authorizationv1.ResourceAttributes{Namespace: cluster,
				Group: "apps.open-cluster-management.io", Resource: "applicationstatusreports", Verb: "create"})).To(BeTrue())
		}, timeout, interval).WithContext(ctx).Should(Succeed())
		// The admission plugin loads the policy and its binding from informers: wait until
		// it refuses a report with a finalizer (one it let through meanwhile is removed).
		Eventually(func(g Gomega, ctx SpecContext) {
			probe := newReport(cluster, "policy-loaded")
			probe.Finalizers = []string{"example.com/keep"}
			err := agentClient(cluster).Create(ctx, probe)
			if err == nil {
				probe.Finalizers = nil
				Expect(k8s.Patch(ctx, probe, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
				Expect(k8s.Delete(ctx, probe)).To(Succeed())
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a report with a finalizer: %v", err)
		}, timeout, interval).WithContext(ctx).Should(Succeed())
	})

	DescribeTable("is granted only what the agent uses, in its own namespace",
		func(ctx SpecContext, ns, group, resource, subresource, name, verb string, want bool) {
			if ns == "other" {
				ns = other
			} else {
				ns = cluster
			}
			Expect(agentMay(ctx, cluster, authorizationv1.ResourceAttributes{Namespace: ns, Group: group,
				Resource: resource, Subresource: subresource, Name: name, Verb: verb})).To(Equal(want))
		},
		Entry("create reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "", "create", true),
		Entry("patch reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "x", "patch", true),
		Entry("delete reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "x", "delete", true),
		Entry("watch reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "", "watch", true),
		Entry("create resource trees", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "", "create", true),
		Entry("patch resource trees", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "x", "patch", true),
		Entry("delete resource trees", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "x", "delete", true),
		Entry("watch resource trees", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "", "watch", true),
		Entry("get its ManagedClusterAddOn", "own", "addon.open-cluster-management.io", "managedclusteraddons", "", "argocd-pull", "get", true),
		Entry("patch its ManagedClusterAddOn's status", "own", "addon.open-cluster-management.io", "managedclusteraddons", "status", "argocd-pull", "patch", true),

		Entry("update reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "x", "update", false),
		Entry("deletecollection of reports", "own", "apps.open-cluster-management.io", "applicationstatusreports", "", "", "deletecollection", false),
		Entry("create reports of another cluster", "other", "apps.open-cluster-management.io", "applicationstatusreports", "", "", "create", false),
		Entry("update resource trees", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "x", "update", false),
		Entry("get a resource tree uncached", "own", "apps.open-cluster-management.io", "applicationresourcetrees", "", "x", "get", false),
		Entry("create resource trees of another cluster", "other", "apps.open-cluster-management.io", "applicationresourcetrees", "", "", "create", false),
		Entry("patch resource trees of another cluster", "other", "apps.open-cluster-management.io", "applicationresourcetrees", "", "x", "patch", false),
		Entry("list resource trees of another cluster", "other", "apps.open-cluster-management.io", "applicationresourcetrees", "", "", "list", false),
		Entry("create ManifestWorks", "own", "work.open-cluster-management.io", "manifestworks", "", "", "create", false),
		Entry("update ManifestWorks", "own", "work.open-cluster-management.io", "manifestworks", "", "addon-argocd-pull-deploy-0", "update", false),
		Entry("patch ManifestWorks", "own", "work.open-cluster-management.io", "manifestworks", "", "addon-argocd-pull-deploy-0", "patch", false),
		Entry("delete ManifestWorks", "own", "work.open-cluster-management.io", "manifestworks", "", "addon-argocd-pull-deploy-0", "delete", false),
		Entry("get another addon's ManagedClusterAddOn", "own", "addon.open-cluster-management.io", "managedclusteraddons", "", "application-manager", "get", false),
		Entry("patch another addon's ManagedClusterAddOn status", "own", "addon.open-cluster-management.io", "managedclusteraddons", "status", "application-manager", "patch", false),
		Entry("patch its ManagedClusterAddOn's spec", "own", "addon.open-cluster-management.io", "managedclusteraddons", "", "argocd-pull", "patch", false),
		Entry("update its ManagedClusterAddOn's spec", "own", "addon.open-cluster-management.io", "managedclusteraddons", "", "argocd-pull", "update", false),
		Entry("update its ManagedClusterAddOn's status", "own", "addon.open-cluster-management.io", "managedclusteraddons", "status", "argocd-pull", "update", false),
		Entry("get the other cluster's ManagedClusterAddOn", "other", "addon.open-cluster-management.io", "managedclusteraddons", "", "argocd-pull", "get", false),
		Entry("get Secrets", "own", "", "secrets", "", "", "get", false),
		Entry("list Secrets", "own", "", "secrets", "", "", "list", false),
		Entry("create Events", "own", "", "events", "", "", "create", false),
	)

	It("may write the reports the agent writes, and the admission policy refuses every other shape", func(ctx SpecContext) {
		agentClient := agentClient(cluster)
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		owner := reports.AddonOwnerReference(mca)

		// The agent's own writes, through the agent's code: a short name and a hashed one.
		long := strings.Repeat("guestbook-", 25) + "x" // 251 characters: "argocd." + it is hashed
		for _, name := range []string{"guestbook", long} {
			Eventually(func() error {
				_, err := reports.PublishReport(ctx, agentClient, pulledApplication(name), cluster, owner, time.Now())
				return err
			}, timeout, interval).Should(Succeed(), "publishing the report of %s", name)
		}
		Expect(report.ReportName("argocd", long)).To(HaveLen(253), "the long name is the hashed form")

		good := func(name string) *appsv1alpha1.ApplicationStatusReport {
			r := newReport(cluster, name)
			r.OwnerReferences = []metav1.OwnerReference{owner}
			return r
		}
		Expect(agentClient.Create(ctx, good("accepted"))).To(Succeed())

		hashed := report.ReportName("argocd", long)
		shapes := map[string]*appsv1alpha1.ApplicationStatusReport{}
		r := good("wrongname")
		r.Name = "guestbook"
		shapes["a name that is not <namespace>.<name>"] = r
		r = good("otherapp")
		r.Name = report.ReportName("argocd", "guestbook-2")
		shapes["the name of another Application"] = r
		r = good(long)
		r.Name = hashed[:len(hashed)-16] + strings.Repeat("g", 16)
		shapes["a long name whose hash is not hex"] = r
		r = good(long)
		r.Name = "argocd.guestbook-guestbook-" + hashed[len(hashed)-16:]
		shapes["a long name cut short"] = r
		r = good("othercluster")
		r.Source.Cluster = other
		shapes["source.cluster another cluster"] = r
		r = good("configmapowner")
		r.OwnerReferences = append(r.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "argocd-cm", UID: "cm-uid"})
		shapes["a ConfigMap owner too"] = r
		r = good("otheraddon")
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ManagedClusterAddOn", Name: "application-manager", UID: "other-uid"}}
		shapes["another addon's ManagedClusterAddOn as owner"] = r
		r = good("finalized")
		r.Finalizers = []string{"example.com/keep"}
		shapes["a finalizer"] = r
		for shape, r := range shapes {
			err := agentClient.Create(ctx, r)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", shape, err)
			Expect(err.Error()).To(ContainSubstring(agentReportPolicyName), shape)
		}

		By("refusing a finalizer added to an accepted report")
		accepted := &appsv1alpha1.ApplicationStatusReport{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(good("accepted")), accepted)).To(Succeed())
		before := accepted.DeepCopy()
		accepted.Finalizers = []string{"example.com/keep"}
		err := agentClient.Patch(ctx, accepted, client.MergeFrom(before))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "adding a finalizer: %v", err)

		By("leaving hub admins' writes alone")
		r = good("admin")
		r.Name = "written-by-an-admin"
		Expect(k8s.Create(ctx, r)).To(Succeed())
	})

	It("may write the resource trees the agent writes, and the admission policy refuses every other shape", func(ctx SpecContext) {
		agentClient := agentClient(cluster)
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		owner := reports.AddonOwnerReference(mca)

		// The agent's own writes, through the agent's code: a short name and a hashed one.
		long := strings.Repeat("guestbook-", 25) + "x"
		written := map[string]*appsv1alpha1.ApplicationResourceTree{}
		for _, name := range []string{"guestbook", long} {
			Eventually(func() (err error) {
				written[name], err = reports.PublishTree(ctx, agentClient, pulledApplication(name), treeOf(name), cluster, owner, time.Now())
				return err
			}, timeout, interval).Should(Succeed(), "publishing the tree of %s", name)
		}
		good := func(name string) *appsv1alpha1.ApplicationResourceTree {
			t := written["guestbook"].DeepCopy()
			t.Name = report.ReportName("argocd", name)
			t.Source.Name, t.Source.UID = name, ""
			t.ResourceVersion = ""
			return t
		}
		Expect(agentClient.Create(ctx, good("accepted-tree"))).To(Succeed())

		shapes := map[string]*appsv1alpha1.ApplicationResourceTree{}
		t := good("wrongname")
		t.Name = "guestbook-tree"
		shapes["a name that is not <namespace>.<name>"] = t
		t = good("othertree")
		t.Name = report.ReportName("argocd", "guestbook-2")
		shapes["the name of another Application"] = t
		t = good("othercluster-tree")
		t.Source.Cluster = other
		shapes["source.cluster another cluster"] = t
		t = good("otheraddon-tree")
		t.OwnerReferences = []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ManagedClusterAddOn", Name: "application-manager", UID: "other-uid"}}
		shapes["another addon's ManagedClusterAddOn as owner"] = t
		t = good("finalized-tree")
		t.Finalizers = []string{"example.com/keep"}
		shapes["a finalizer"] = t
		for shape, t := range shapes {
			err := agentClient.Create(ctx, t)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", shape, err)
			Expect(err.Error()).To(ContainSubstring(agentReportPolicyName), shape)
		}
		Expect(agentClient.Create(ctx, &appsv1alpha1.ApplicationResourceTree{
			ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: report.ReportName("argocd", "guestbook")},
			Source:     written["guestbook"].Source, Tree: written["guestbook"].Tree,
		})).To(Satisfy(apierrors.IsForbidden), "a tree in another cluster's namespace")
	})

	It("is refused a report past its namespace's quota", func(ctx SpecContext) {
		quotaCluster := unique("quota")
		createCluster(ctx, quotaCluster)
		enableAddon(ctx, quotaCluster, "")
		waitForHubRoleBinding(ctx, quotaCluster)
		quota := &corev1.ResourceQuota{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: quotaCluster, Name: addon.AgentReportQuotaName}, quota)
		}, timeout, interval).Should(Succeed())
		Expect(quota.Spec.Hard).To(Equal(corev1.ResourceList{
			"count/applicationstatusreports.apps.open-cluster-management.io": resource.MustParse("1"),
			"count/applicationresourcetrees.apps.open-cluster-management.io": resource.MustParse("1")}))
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: quotaCluster, Name: apps.AddonName}, mca)).To(Succeed())
		Expect(quota.OwnerReferences).To(ContainElement(HaveField("UID", mca.UID)))

		// The API server's quota admission enforces status.hard, which kube-controller-manager's
		// quota controller copies from spec.hard with the usage it counts. This API server
		// runs no controller manager: the spec does what it would.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{
			"count/applicationstatusreports.apps.open-cluster-management.io": resource.MustParse("0"),
			"count/applicationresourcetrees.apps.open-cluster-management.io": resource.MustParse("0")}}
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())

		agentClient := agentClient(quotaCluster)
		owner := reports.AddonOwnerReference(mca)
		Eventually(func() error {
			_, err := reports.PublishReport(ctx, agentClient, pulledApplication("first"), quotaCluster, owner, time.Now())
			return err
		}, timeout, interval).Should(Succeed())
		_, err := reports.PublishReport(ctx, agentClient, pulledApplication("second"), quotaCluster, owner, time.Now())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the second report: %v", err)
		Expect(err.Error()).To(ContainSubstring("exceeded quota: " + addon.AgentReportQuotaName))
		// The first one still updates: the quota counts objects, not writes.
		_, err = reports.PublishReport(ctx, agentClient, pulledApplication("first"), quotaCluster, owner, time.Now())
		Expect(err).NotTo(HaveOccurred())

		By("counting resource trees the same way")
		_, err = reports.PublishTree(ctx, agentClient, pulledApplication("first"), treeOf("first"), quotaCluster, owner, time.Now())
		Expect(err).NotTo(HaveOccurred())
		_, err = reports.PublishTree(ctx, agentClient, pulledApplication("second"), treeOf("second"), quotaCluster, owner, time.Now())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the second tree: %v", err)
		Expect(err.Error()).To(ContainSubstring("exceeded quota: " + addon.AgentReportQuotaName))
	})

	It("is not issued to the registration agent of a cluster whose name extends its cluster's", func(ctx SpecContext) {
		// prod1 and prod10: the framework's check, a prefix without the colon, approves both.
		prod1 := unique("prod")
		prod10 := prod1 + "0"
		for _, c := range []string{prod1, prod10} {
			createCluster(ctx, c)
			enableAddon(ctx, c, "")
		}
		request := addonCSRRequest(prod1)
		forged := createCSR(ctx, prod1, prod10, request)
		genuine := createCSR(ctx, prod1, prod1, request)
		expectOnlyGenuineApproved(ctx, genuine, forged)
	})
})
