package agent_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// The agent of a second cluster, on the suite's two API servers, that holds only what the
// addon grants it. Its cluster, install namespace and watched namespace are its own, so
// it and the suite's admin agent never see each other's Applications or reports.
const (
	scopedCluster   = "cluster-scoped"
	scopedInstallNS = "argocd-pull-scoped"
	scopedWatchNS   = "argocd-scoped"
)

// scopedAgentSpecs run the agent with exactly the permissions the addon gives it: on the
// managed cluster the ServiceAccount of the rendered agent chart with the chart's RBAC and
// nothing else, on the hub the identity addon registration signs its certificate for with
// the Role and RoleBinding of the addon's PermissionConfig and nothing else. A permission
// the chart or the PermissionConfig lacks fails these specs; with admin credentials, as in
// the rest of the suite, it would pass unnoticed.
//
// They run last inside the suite's Ordered container, once its specs have installed Argo
// CD's CRDs on the shared managed cluster. A top-level container of their own could run
// first (Ginkgo shuffles top-level containers) and install the CRDs before the suite's
// first spec asserts they are missing.
func scopedAgentSpecs() {
	var (
		scoped            *runningAgent
		refused           = &refusedRequests{}
		managedRequests   = framework.NewRequestCounter()
		writeErrorsBefore float64
	)

	BeforeAll(func() {
		// A no-op after the specs before this container; lets it run focused on its own.
		Expect(managedServer.InstallArgoCDCRDs()).To(Succeed())

		// The hub side as the addon manager leaves it: the cluster namespace and the
		// ManagedClusterAddOn, whose install namespace the rendered chart uses.
		Expect(hub.Create(ctx, namespace(scopedCluster))).To(Succeed())
		mca := &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: scopedCluster, Name: apps.AddonName},
			Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: scopedInstallNS},
		}
		Expect(hub.Create(ctx, mca)).To(Succeed())
		cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: scopedCluster}}

		// The real addon, as the manager builds it, with the hub's clients: its
		// PermissionConfig writes the hub RBAC as in production.
		opts := addon.NewOptions()
		opts.WatchNamespaces = []string{scopedWatchNS}
		kubeClient, err := kubernetes.NewForConfig(hubServer.Config)
		Expect(err).NotTo(HaveOccurred())
		addonClient, err := addonclient.NewForConfig(hubServer.Config)
		Expect(err).NotTo(HaveOccurred())
		agentAddon, err := addon.NewAgentAddon(kubeClient, addonClient, opts)
		Expect(err).NotTo(HaveOccurred())
		registration := agentAddon.GetAgentAddonOptions().Registration
		// The chart's ClusterRole, which the PermissionConfig binds in the cluster namespace.
		chart, err := framework.RenderChart(framework.ChartNamespace, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.CreateObjects(ctx, hub, slices.DeleteFunc(chart, func(o *unstructured.Unstructured) bool {
			return o.GetKind() != "ClusterRole" || o.GetName() != addon.AgentHubRoleName
		}))).To(Succeed())
		Expect(registration.PermissionConfig(cluster, mca)).To(Succeed())

		// The hub identity is the subject registration gets the agent's certificate for.
		csrs, err := registration.CSRConfigurations(cluster, mca)
		Expect(err).NotTo(HaveOccurred())
		Expect(csrs).To(HaveLen(1))
		hubIdentity := rest.ImpersonationConfig{UserName: csrs[0].Subject.User, Groups: csrs[0].Subject.Groups}

		// The managed side: the rendered chart's objects, except the Deployment, which
		// this process plays. The watched namespace is the user's, not the chart's.
		rendered, err := agentAddon.Manifests(cluster, mca)
		Expect(err).NotTo(HaveOccurred())
		Expect(managed.Create(ctx, namespace(scopedWatchNS))).To(Succeed())
		deployment := createAgentChart(rendered)
		pod := deployment.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		managedIdentity := serviceAccountIdentity(deployment.Namespace, pod.ServiceAccountName)

		hubCfg, managedCfg := impersonating(hubServer.Config, hubIdentity), impersonating(managedServer.Config, managedIdentity)
		waitForPermissions(hubCfg, managedCfg)

		writeErrorsBefore = writeErrors()
		scoped = startAgent(func(o *agent.Options) {
			// The flags of the rendered container, through the agent's own flag set, so the
			// agent watches and writes where the chart's RBAC points.
			parseAgentArgs(o, pod.Containers[0].Args)
			o.Endpoints.MetricsAddr, o.Endpoints.ProbeAddr = "0", "0"
			// Where Argo CD's Redis Service would be.
			o.RedisAddress = argoRedis.Addr
			o.HubConfig = refused.wrap("hub", hubCfg)
			o.ManagedConfig = managedRequests.Wrap(refused.wrap("managed cluster", managedCfg))
		})
		DeferCleanup(func() { Expect(scoped.stop()).To(Succeed()) })
	})

	// Every spec checks that no API server refused the agent a request: a missing
	// permission can also show as a retried error the observable outcome hides. Their
	// Eventually calls name the refused requests too, as the cause of a timeout.
	AfterEach(func() {
		Expect(refused.list()).To(BeEmpty(), "requests of the agent that an API server refused")
		Expect(writeErrors()).To(Equal(writeErrorsBefore), "failed report writes")
	})

	It("reports a pulled Application to its cluster namespace on the hub", func() {
		app := createApplication(pulledApp(scopedWatchNS, "guestbook").Build(), syncedHealthy("abc"))
		Eventually(func(g Gomega) {
			rep := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(hub.Get(ctx, scopedReportKey("guestbook"), rep)).To(Succeed())
			g.Expect(rep.Source).To(Equal(appsv1alpha1.ApplicationReportSource{
				Cluster: scopedCluster, Namespace: scopedWatchNS, Name: "guestbook", UID: string(app.UID),
				HubApplicationNamespace: hubAppNS, HubApplicationName: "guestbook",
			}))
			g.Expect(rep.Status.Sync).To(Equal(appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "abc"}))
			g.Expect(rep.Status.Health.Status).To(Equal(appsv1alpha1.HealthStatusHealthy))
			g.Expect(rep.Status.OperationState).To(HaveField("Phase", appsv1alpha1.OperationSucceeded))
			g.Expect(rep.Status.Resources).To(HaveLen(2))
			// Owned by the ManagedClusterAddOn, so disabling the addon deletes the report.
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: scopedCluster, Name: apps.AddonName}, mca)).To(Succeed())
			g.Expect(rep.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
				APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ManagedClusterAddOn", Name: apps.AddonName, UID: mca.UID,
			}))
		}).Should(Succeed(), refused.describe)
	})

	It("reads the resource tree with the password of the Secret its Role lets it read", func() {
		// An Application outside Argo CD's namespace: its tree is under "<namespace>_<name>".
		setRedisSecret()
		writeResourceTree(redisPassword, scopedWatchNS+"_tree", &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{{
			ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
			Health:      &argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "exceeded its progress deadline"},
		}}})
		status := syncedHealthy("abc")
		status.ReconciledAt, status.ControllerNamespace = &finished, argoNamespace
		status.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
		for i := range status.Resources {
			status.Resources[i].Health = nil
		}
		createApplication(pulledApp(scopedWatchNS, "tree").Build(), status)
		Eventually(func(g Gomega) {
			rep := &appsv1alpha1.ApplicationStatusReport{}
			g.Expect(hub.Get(ctx, scopedReportKey("tree"), rep)).To(Succeed())
			g.Expect(rep.Status.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceRedisTree))
			g.Expect(rep.Status.Resources).To(ContainElement(And(HaveField("Kind", "Deployment"),
				HaveField("Health", HaveValue(HaveField("Status", appsv1alpha1.HealthStatusDegraded))))))
		}).Should(Succeed(), "refused: %v", refused.list())
		Expect(managed.Delete(ctx, pulledApp(scopedWatchNS, "tree").Build())).To(Succeed())
	})

	It("sets the hub's requests on a pulled Application", func() {
		createApplication(pulledApp(scopedWatchNS, "requested").Build(), syncedHealthy("abc"))
		setAnnotations(client.ObjectKey{Namespace: scopedWatchNS, Name: "requested"}, map[string]any{
			apps.AnnotationOperationRequest: `{"id":"op-1","operation":{"sync":{"revision":"HEAD"}}}`,
			apps.AnnotationRefreshRequest:   `{"id":"r-1","refresh":"hard"}`,
		})
		Eventually(func(g Gomega) {
			app := getSpoke(g, client.ObjectKey{Namespace: scopedWatchNS, Name: "requested"})
			g.Expect(app.Object["operation"]).To(Equal(map[string]any{"sync": map[string]any{"revision": "HEAD"}}))
			g.Expect(app.GetAnnotations()).To(And(
				HaveKeyWithValue(apps.AnnotationOperationDelivered, "op-1"),
				HaveKeyWithValue(apps.AnnotationRefreshDelivered, "r-1"),
				HaveKeyWithValue(apps.AnnotationRefresh, "hard")))
		}).Should(Succeed(), refused.describe)
	})

	It("updates the report when Argo CD changes the status", func() {
		status := syncedHealthy("def")
		status.Health = argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "Deployment has minimum availability false"}
		Expect(setStatus(ctx, managed, client.ObjectKey{Namespace: scopedWatchNS, Name: "guestbook"}, status)).To(Succeed())
		Eventually(scopedReportOf("guestbook")).Should(And(
			HaveField("Status.Sync.Revision", "def"),
			HaveField("Status.Health", appsv1alpha1.HealthReport{
				Status: appsv1alpha1.HealthStatusDegraded, Message: "Deployment has minimum availability false"})), refused.describe)
	})

	It("deletes the report when the Application is deleted", func() {
		Expect(managed.Delete(ctx, &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: scopedWatchNS, Name: "guestbook"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, scopedReportKey("guestbook"), &appsv1alpha1.ApplicationStatusReport{}))
		}).Should(BeTrue(), refused.describe)
	})

	It("says on its ManagedClusterAddOn that Applications are watched", func() {
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: scopedCluster, Name: apps.AddonName}, mca)).To(Succeed())
			g.Expect(meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionApplicationsWatched)).To(And(
				Not(BeNil()),
				HaveField("Status", metav1.ConditionTrue),
				HaveField("Reason", apps.ReasonApplicationsWatched),
				HaveField("Message", "Watching Argo CD Applications in namespace "+scopedWatchNS+".")))
		}).Should(Succeed(), refused.describe)
	})

	// Creating the Lease and renewing it are different rules of the chart's Role (create,
	// and update of the Lease by name). addon-framework's lease updater runs every 60-75 s
	// and, in a run whose health checks both passed, reads the Lease and then creates or
	// updates it. So after the Lease is seen, a later read of it by this agent means a
	// later run passed its checks, and that run's renewal must follow. The check counter
	// cannot tell this agent's runs from the suite's agent's, which runs alongside; the
	// agent's own requests to the managed cluster can.
	It("creates its addon Lease in the install namespace and renews it", func() {
		// Give-up bounds of about two periods (60 s plus up to 25 % jitter, and up to 11 s
		// of checks); no clock decides the outcome.
		const giveUp = 3 * time.Minute
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: scopedInstallNS, Name: apps.AddonName}
		leasePath := fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", scopedInstallNS, apps.AddonName)
		Eventually(func(g Gomega) {
			g.Expect(managed.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		}).WithTimeout(giveUp).Should(Succeed(), refused.describe)
		seen := lease.Spec.RenewTime.Time
		// The read of the run that wrote what the Lease shows was answered before that write.
		reads := managedRequests.Answered(http.MethodGet, leasePath)
		Eventually(func() int { return managedRequests.Answered(http.MethodGet, leasePath) }).WithTimeout(giveUp).
			Should(BeNumerically(">", reads), "a later run of the agent's lease updater passed its checks and read the Lease")
		Eventually(func(g Gomega) {
			g.Expect(managed.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", seen))
		}).Should(Succeed(), refused.describe)
	})
}

// createAgentChart creates on the managed cluster the objects of the rendered agent
// chart that give the agent its identity and permissions, namespaces first, and returns
// the Deployment, which it does not create. A kind it does not know fails the spec, so a
// new object in the chart gets a decision here.
func createAgentChart(rendered []runtime.Object) *appsv1.Deployment {
	GinkgoHelper()
	var deployment *appsv1.Deployment
	var objs []client.Object
	for _, obj := range rendered {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deployment = o
		case *corev1.Namespace, *corev1.ServiceAccount, *corev1.Service, *networkingv1.NetworkPolicy,
			*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
			objs = append(objs, o.(client.Object))
		default:
			Fail(fmt.Sprintf("the agent chart renders a %T this spec does not create", obj))
		}
	}
	Expect(deployment).NotTo(BeNil(), "the rendered agent chart has no Deployment")
	slices.SortStableFunc(objs, func(a, b client.Object) int {
		_, aNS := a.(*corev1.Namespace)
		_, bNS := b.(*corev1.Namespace)
		switch {
		case aNS && !bNS:
			return -1
		case bNS && !aNS:
			return 1
		}
		return 0
	})
	for _, o := range objs {
		Expect(managed.Create(ctx, o)).To(Succeed(), "creating %T %s", o, client.ObjectKeyFromObject(o))
	}
	return deployment
}

// serviceAccountIdentity is what a pod of the ServiceAccount authenticates as.
func serviceAccountIdentity(namespace, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// impersonating is the admin configuration cfg acting as identity.
func impersonating(cfg *rest.Config, identity rest.ImpersonationConfig) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = identity
	return c
}

// waitForPermissions checks that the identities are not admins, then waits until the
// API servers apply the RBAC just created (their authorizers learn it through informers),
// so a request the agent makes at once is not refused for that reason.
func waitForPermissions(hubCfg, managedCfg *rest.Config) {
	GinkgoHelper()
	hubAs, err := client.New(hubCfg, client.Options{Scheme: hubServer.Scheme})
	Expect(err).NotTo(HaveOccurred())
	managedAs, err := client.New(managedCfg, client.Options{Scheme: managedServer.Scheme})
	Expect(err).NotTo(HaveOccurred())

	Expect(hubAs.List(ctx, &corev1.SecretList{}, client.InNamespace(scopedCluster))).To(
		Satisfy(apierrors.IsForbidden), "the agent's hub identity reads Secrets: it is an admin")
	Expect(managedAs.List(ctx, &corev1.SecretList{}, client.InNamespace(scopedInstallNS))).To(
		Satisfy(apierrors.IsForbidden), "the agent's managed-cluster identity reads Secrets: it is an admin")

	// One granted request per binding.
	Eventually(func(g Gomega) {
		g.Expect(hubAs.List(ctx, &appsv1alpha1.ApplicationStatusReportList{}, client.InNamespace(scopedCluster))).To(Succeed())
		g.Expect(managedAs.List(ctx, &corev1.NamespaceList{})).To(Succeed())
		g.Expect(managedAs.List(ctx, &argov1alpha1.ApplicationList{}, client.InNamespace(scopedWatchNS))).To(Succeed())
		err := managedAs.Get(ctx, client.ObjectKey{Namespace: scopedInstallNS, Name: apps.AddonName}, &coordinationv1.Lease{})
		g.Expect(err).To(Satisfy(apierrors.IsNotFound))
	}).Should(Succeed())
}

// parseAgentArgs sets o from a rendered agent container's arguments with the agent's own
// flags, as the binary would.
func parseAgentArgs(o *agent.Options, args []string) {
	GinkgoHelper()
	Expect(args).NotTo(BeEmpty())
	Expect(args[0]).To(Equal("agent"))
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	// --v is klog's flag, which the binary's root command registers; the suite logs here.
	flags := slices.DeleteFunc(slices.Clone(args[1:]), func(a string) bool { return strings.HasPrefix(a, "--v=") })
	Expect(cmd.Flags().Parse(flags)).To(Succeed())
}

func scopedReportKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: scopedCluster, Name: report.ReportName(scopedWatchNS, name)}
}

// scopedReportOf returns a function that reads the hub report of an Application of the
// scoped agent, nil if none.
func scopedReportOf(name string) func() *appsv1alpha1.ApplicationStatusReport {
	return func() *appsv1alpha1.ApplicationStatusReport {
		rep := &appsv1alpha1.ApplicationStatusReport{}
		if err := hub.Get(ctx, scopedReportKey(name), rep); err != nil {
			return nil
		}
		return rep
	}
}

// refusedRequests counts the requests an API server answered 403 Forbidden.
type refusedRequests struct {
	mu    sync.Mutex
	count map[string]int
}

// wrap is cfg with its responses watched for 403s; server names it in the record.
func (r *refusedRequests) wrap(server string, cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				r.mu.Lock()
				if r.count == nil {
					r.count = map[string]int{}
				}
				r.count[fmt.Sprintf("%s: %s %s", server, req.Method, req.URL.RequestURI())]++
				r.mu.Unlock()
			}
			return resp, err
		})
	}
	return c
}

// list is the refused requests, each with how often it was refused.
func (r *refusedRequests) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for req, n := range r.count {
		out = append(out, fmt.Sprintf("%s (%d times)", req, n))
	}
	slices.Sort(out)
	return out
}

// describe names the refused requests, for a failure message.
func (r *refusedRequests) describe() string {
	if l := r.list(); len(l) > 0 {
		return "requests of the agent that an API server refused:\n" + strings.Join(l, "\n")
	}
	return "no request of the agent was refused"
}
