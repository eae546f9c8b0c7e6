package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// newReport is the report of ApplicationSet namespace/name as the hub writes it: cluster1
// synced and healthy; cluster2, when degraded, out of sync with its agent unavailable.
func newReport(namespace, name string, degraded bool) *appsv1alpha1.MulticlusterApplicationSetReport {
	entry := func(cluster, sync, health string, agent bool, conditions ...appsv1alpha1.Condition) appsv1alpha1.ClusterCondition {
		return appsv1alpha1.ClusterCondition{
			Cluster: cluster, App: namespace + "/" + cluster + "-" + name + "/" + cluster + "/" + cluster + "-" + name + "-7c0e3",
			SyncStatus: sync, HealthStatus: health, AgentAvailable: ptr.To(agent), Conditions: conditions,
			OperationStatePhase: "Succeeded", SyncRevision: "8f3c2b1", Delivery: appsv1alpha1.DeliveryPull,
		}
	}
	r := &appsv1alpha1.MulticlusterApplicationSetReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{appsv1alpha1.LabelHostingApplicationSet: namespace + "." + name}},
		Statuses: appsv1alpha1.AppConditions{
			ClusterConditions: []appsv1alpha1.ClusterCondition{
				entry("cluster1", "Synced", "Healthy", true),
				entry("cluster2", "Synced", "Healthy", true),
			},
			Summary: appsv1alpha1.ReportSummary{Clusters: "2", Synced: "2", NotSynced: "0", Healthy: "2", NotHealthy: "0", InProgress: "0", AgentsUnavailable: "0"},
		},
	}
	if degraded {
		r.Statuses.ClusterConditions[1] = entry("cluster2", "OutOfSync", "Degraded", false,
			appsv1alpha1.Condition{Type: appsv1alpha1.ConditionAgentUnavailable, Message: "since 10:00, details may be stale"})
		r.Statuses.Summary = appsv1alpha1.ReportSummary{Clusters: "2", Synced: "1", NotSynced: "1", Healthy: "1", NotHealthy: "1", InProgress: "0", AgentsUnavailable: "1"}
	}
	return r
}

// createNamespace creates namespace name unless it exists: no namespace controller runs to
// delete one.
func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

func createReport(ctx context.Context, r *appsv1alpha1.MulticlusterApplicationSetReport) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, r)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, r))).To(Succeed()) })
}

// syncBuffer is an output the command writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runReport runs the binary's `report` command tree with args and the suite's kubeconfig
// (unless args name one), writing its output to out.
func runReport(ctx context.Context, out *syncBuffer, args ...string) error {
	root := cli.NewRootCommand()
	root.SetOut(out)
	root.SetErr(GinkgoWriter)
	if !strings.Contains(strings.Join(args, " "), "--kubeconfig") {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	root.SetArgs(append([]string{"report"}, args...))
	return root.ExecuteContext(ctx)
}

// report is what `report args...` prints.
func report(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out := &syncBuffer{}
	Expect(runReport(ctx, out, args...)).To(Succeed())
	return out.String()
}

var _ = Describe("argocd-pull-addon report", func() {
	const ns = "team-report"

	BeforeEach(func(ctx context.Context) {
		createNamespace(ctx, ns)
		createReport(ctx, newReport(ns, "guestbook-app", true))
	})

	It("prints the table of one ApplicationSet's report, -o wide adding columns", func(ctx context.Context) {
		Expect(report(ctx, "guestbook-app", "-n", ns)).To(Equal(
			"CLUSTER    APP                      SYNC        HEALTH     AGENT         ERRORS\n" +
				"cluster1   cluster1-guestbook-app   Synced      Healthy    available     -\n" +
				"cluster2   cluster2-guestbook-app   OutOfSync   Degraded   unavailable   AgentUnavailable: since 10:00, details may be stale\n" +
				"2 clusters: 1 synced, 1 healthy, 0 in progress (1 not synced, 1 not healthy, 1 agents unavailable)\n"))

		wide := strings.Split(report(ctx, "guestbook-app", "-n", ns, "-o", "wide"), "\n")
		Expect(strings.Fields(wide[0])).To(Equal([]string{
			"CLUSTER", "APP", "SYNC", "HEALTH", "AGENT", "ERRORS", "OPERATION", "REVISION", "REPORTED", "DELIVERY", "FAILING"}))
		Expect(strings.Fields(wide[1])).To(Equal([]string{
			"cluster1", "cluster1-guestbook-app", "Synced", "Healthy", "available", "-", "Succeeded", "8f3c2b1", "-", "Pull", "-"}))
	})

	It("reads the namespace of the kubeconfig's context when -n is not given", func(ctx context.Context) {
		cfg, err := clientcmd.Load(apiServer.Env.KubeConfig)
		Expect(err).NotTo(HaveOccurred())
		cfg.Contexts[cfg.CurrentContext].Namespace = ns
		path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
		Expect(report(ctx, "guestbook-app", "--kubeconfig", path)).To(ContainSubstring("cluster2-guestbook-app"))
	})

	It("prints the report object with -o json and -o yaml", func(ctx context.Context) {
		onHub := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guestbook-app"}, onHub)).To(Succeed())
		onHub.ManagedFields = nil // left out by the printers, as kubectl leaves them out

		for _, format := range []string{"json", "yaml"} {
			printed := &appsv1alpha1.MulticlusterApplicationSetReport{}
			Expect(yaml.Unmarshal([]byte(report(ctx, "guestbook-app", "-n", ns, "-o", format)), printed)).To(Succeed(), format)
			Expect(printed.APIVersion).To(Equal("apps.open-cluster-management.io/v1alpha1"), format)
			Expect(printed.Kind).To(Equal("MulticlusterApplicationSetReport"), format)
			printed.TypeMeta = metav1.TypeMeta{}
			Expect(printed).To(Equal(onHub), format)
		}
	})

	It("keeps the entries that need attention or of the clusters asked for; json prints the report narrowed to them", func(ctx context.Context) {
		Expect(report(ctx, "guestbook-app", "-n", ns, "--attention")).To(And(
			ContainSubstring("cluster2-guestbook-app"), Not(ContainSubstring("cluster1-guestbook-app")),
			ContainSubstring("2 clusters: 1 synced"), // the summary counts every cluster
		))
		for _, args := range [][]string{{"--cluster", "cluster1"}, {"--cluster", "cluster1,cluster9"}, {"--cluster", "cluster9", "--cluster", "cluster1"}} {
			Expect(report(ctx, append([]string{"guestbook-app", "-n", ns}, args...)...)).To(And(
				ContainSubstring("cluster1-guestbook-app"), Not(ContainSubstring("cluster2-guestbook-app"))), "%v", args)
		}
		Expect(report(ctx, "guestbook-app", "-n", ns, "--attention", "--cluster", "cluster1")).To(HavePrefix("No cluster entries.\n"))

		printed := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(json.Unmarshal([]byte(report(ctx, "guestbook-app", "-n", ns, "--attention", "-o", "json")), printed)).To(Succeed())
		Expect(printed.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", "cluster2")))
		Expect(printed.Statuses.Summary).To(Equal(newReport(ns, "guestbook-app", true).Statuses.Summary))
	})

	It("lists the reports of a namespace, or of all with a namespace column; --attention leaves out reports that need none", func(ctx context.Context) {
		const other = "team-other"
		createNamespace(ctx, other)
		createReport(ctx, newReport(other, "web", false))
		createReport(ctx, newReport(ns, "api", false))

		Expect(strings.Fields(strings.Split(report(ctx, "-n", ns), "\n")[0])).To(HaveExactElements("APPLICATIONSET", "CLUSTER", "APP", "SYNC", "HEALTH", "AGENT", "ERRORS"))
		Expect(report(ctx, "-n", ns)).To(And(ContainSubstring("api: 2 clusters"), ContainSubstring("guestbook-app: 2 clusters"), Not(ContainSubstring("web"))))

		all := report(ctx, "-A")
		Expect(strings.Fields(strings.Split(all, "\n")[0])[:2]).To(Equal([]string{"NAMESPACE", "APPLICATIONSET"}))
		Expect(all).To(And(ContainSubstring(other+"/web: 2 clusters"), ContainSubstring(ns+"/guestbook-app: 2 clusters"), ContainSubstring(ns+"/api: 2 clusters")))

		attention := report(ctx, "-A", "--attention")
		Expect(attention).To(ContainSubstring(ns + "/guestbook-app: "))
		Expect(attention).NotTo(ContainSubstring("web"))
		Expect(attention).NotTo(ContainSubstring("api"))

		list := &appsv1alpha1.MulticlusterApplicationSetReportList{}
		Expect(json.Unmarshal([]byte(report(ctx, "-A", "--attention", "-o", "json")), list)).To(Succeed())
		Expect(list.Items).To(ConsistOf(And(HaveField("Namespace", ns), HaveField("Name", "guestbook-app"))))
	})

	It("says what it did not find", func(ctx context.Context) {
		err := runReport(ctx, &syncBuffer{}, "missing", "-n", ns)
		Expect(err).To(MatchError(And(ContainSubstring("ApplicationSet missing"), ContainSubstring("not found"))))
		Expect(report(ctx, "-n", "default")).To(Equal("No MulticlusterApplicationSetReports in namespace default.\n"))
		Expect(runReport(ctx, &syncBuffer{}, "guestbook-app", "-A")).To(MatchError(ContainSubstring("-n")))
	})

	It("fails, with and without --watch, when the user may not read the reports", func(ctx context.Context) {
		path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(framework.WriteImpersonatingKubeconfig(apiServer.Config, path, "someone", "system:authenticated")).To(Succeed())
		for _, args := range [][]string{{"guestbook-app"}, {"guestbook-app", "--watch"}, {"--watch"}} {
			err := runReport(ctx, &syncBuffer{}, append(args, "-n", ns, "--kubeconfig", path)...)
			Expect(err).To(MatchError(ContainSubstring("forbidden")), "%v", args)
		}
	})

	It("prints again on each change with --watch, from a watch, and not when nothing it shows changed", func(ctx context.Context) {
		watchCtx, stop := context.WithCancel(ctx)
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() { done <- runReport(watchCtx, out, "guestbook-app", "-n", ns, "--watch") }()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(Succeed()), "the command ends when interrupted")
		})
		Eventually(out.String).Should(ContainSubstring("1 agents unavailable"))
		first := out.String()

		By("a change nobody sees in the table (a label): nothing printed")
		r := &appsv1alpha1.MulticlusterApplicationSetReport{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guestbook-app"}, r)).To(Succeed())
		r.Labels["example"] = "unrelated"
		Expect(k8s.Update(ctx, r)).To(Succeed())
		Consistently(out.String).WithTimeout(2 * time.Second).Should(Equal(first))

		By("cluster2 synced and healthy again: the table printed again")
		healthy := newReport(ns, "guestbook-app", false)
		r.Statuses = healthy.Statuses
		Expect(k8s.Update(ctx, r)).To(Succeed())
		Eventually(out.String).Should(Equal(first + "\n" +
			"CLUSTER    APP                      SYNC     HEALTH    AGENT       ERRORS\n" +
			"cluster1   cluster1-guestbook-app   Synced   Healthy   available   -\n" +
			"cluster2   cluster2-guestbook-app   Synced   Healthy   available   -\n" +
			"2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy, 0 agents unavailable)\n"))

		By("the report deleted: said")
		Expect(k8s.Delete(ctx, r)).To(Succeed())
		Eventually(out.String).Should(HaveSuffix("\nNo report of ApplicationSet guestbook-app in namespace " + ns + ".\n"))
	})
})
