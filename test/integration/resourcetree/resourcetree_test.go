package resourcetree_test

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/argoproj/argo-cd/v2/common"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	wiretree "github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// guestbookTree is a Deployment with a ReplicaSet under it, the Deployment's health h.
func guestbookTree(h health.HealthStatusCode) *argov1alpha1.ApplicationTree {
	dep := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment",
		Namespace: "guestbook", Name: "guestbook-ui", UID: "dep-uid"}, Health: &argov1alpha1.HealthStatus{Status: h}}
	rs := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet",
		Namespace: "guestbook", Name: "guestbook-ui-5d4f", UID: "rs-uid"}, ParentRefs: []argov1alpha1.ResourceRef{dep.ResourceRef},
		Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}}
	return &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{dep, rs}}
}

// createPulledApplication creates hub Application namespace/name pulled to cluster.
func createPulledApplication(namespace, name, cluster string) *argov1alpha1.Application {
	GinkgoHelper()
	app := builders.Application(name).Namespace(namespace).Pulled().Cluster(cluster).Build()
	Expect(k8s.Create(ctx, app)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, app))).To(Succeed()) })
	return app
}

// putTree writes, as the cluster's agent does, the tree of the hub Application
// hubNamespace/hubName into cluster's namespace; omitted is what the agent says it cut.
func putTree(cluster, hubNamespace, hubName string, tree *argov1alpha1.ApplicationTree, omitted int32) *appsv1alpha1.ApplicationResourceTree {
	GinkgoHelper()
	data, err := wiretree.Encode(tree)
	Expect(err).NotTo(HaveOccurred())
	data.OmittedNodes = omitted
	data.ObservedAt = metav1.NewTime(time.Now().Truncate(time.Second))
	obj := &appsv1alpha1.ApplicationResourceTree{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: hubName + "-tree"}}
	err = k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	obj.Source = appsv1alpha1.ApplicationReportSource{Cluster: cluster, Namespace: "argocd", Name: hubName,
		HubApplicationNamespace: hubNamespace, HubApplicationName: hubName}
	obj.Tree = data
	if apierrors.IsNotFound(err) {
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed()) })
	} else {
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Update(ctx, obj)).To(Succeed())
	}
	return obj
}

// served is the tree the hub's argocd-server reads for the Application whose instance
// name is key; an error when it has none.
func served(key string) func() (*argov1alpha1.ApplicationTree, error) {
	return func() (*argov1alpha1.ApplicationTree, error) {
		tree := &argov1alpha1.ApplicationTree{}
		if err := argoCache.GetAppResourcesTree(key, tree); err != nil {
			return nil, err
		}
		return tree, nil
	}
}

// redisKey is the Redis key Argo CD keeps the tree of instance name key under (gzip).
func redisKey(key string) string {
	return fmt.Sprintf("app|resources-tree|%s|%s.gz", key, common.CacheVersion)
}

var setCalls = regexp.MustCompile(`(?m)^cmdstat_set:calls=(\d+),`)

// redisSets is how many SET commands Redis has run.
func redisSets() int {
	GinkgoHelper()
	info, err := redisClient.Info(ctx, "commandstats").Result()
	Expect(err).NotTo(HaveOccurred())
	m := setCalls.FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	Expect(err).NotTo(HaveOccurred())
	return n
}

// treeGETs is how many GETs of the tree object the manager sent (uncached reads).
func treeGETs(tree *appsv1alpha1.ApplicationResourceTree) int {
	return requests.Answered("GET", fmt.Sprintf("/apis/apps.open-cluster-management.io/v1alpha1/namespaces/%s/applicationresourcetrees/%s",
		tree.Namespace, tree.Name))
}

func metric(name string, labels ...string) float64 {
	GinkgoHelper()
	m, err := framework.GatherMetrics()
	Expect(err).NotTo(HaveOccurred())
	return m.Value(name, labels...)
}

func reconciles() float64 {
	GinkgoHelper()
	return metric("controller_runtime_reconcile_total", "controller", resourcetree.ControllerName)
}

// warnings are the messages of the Warning Events with reason on app.
func warnings(app *argov1alpha1.Application, reason string) func() []string {
	return func() []string {
		events := &corev1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(app.Namespace)); err != nil {
			return nil
		}
		var out []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == app.Name && e.InvolvedObject.Kind == "Application" && e.Type == corev1.EventTypeWarning && e.Reason == reason {
				out = append(out, e.Message)
			}
		}
		return out
	}
}

var isCacheMiss = func(err error) bool { return errors.Is(err, appstate.ErrCacheMiss) }

var _ = Describe("Writing the clusters' resource trees into the hub Argo CD's Redis", func() {
	It("serves the tree of a pulled Application under its key, with Argo CD's cache, without expiry", func() {
		createPulledApplication(argoNamespace, "guestbook", "c1")
		putTree("c1", argoNamespace, "guestbook", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("guestbook")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		// The last known tree must stay while the cluster is offline: Argo CD's own trees
		// expire after an hour, this one not in a lifetime.
		Expect(redisClient.TTL(ctx, redisKey("guestbook")).Val()).To(BeNumerically(">", 50*365*24*time.Hour))
		Eventually(func() float64 { return metric("argocd_pull_resource_trees_written_total") }).Should(BeNumerically(">=", 1))

		By("a changed tree replaces it: a Degraded Deployment shows Degraded")
		putTree("c1", argoNamespace, "guestbook", guestbookTree(health.HealthStatusDegraded), 0)
		Eventually(served("guestbook")).Should(Equal(guestbookTree(health.HealthStatusDegraded)))
	})

	It("keys an Application outside Argo CD's namespace <namespace>_<name>", func() {
		createPulledApplication("team-a", "shop", "c1")
		putTree("c1", "team-a", "shop", guestbookTree(health.HealthStatusProgressing), 0)

		Eventually(served("team-a_shop")).Should(Equal(guestbookTree(health.HealthStatusProgressing)))
		_, err := served("shop")()
		Expect(err).To(MatchError(isCacheMiss, "a cache miss"))
	})

	It("ignores a tree in another cluster's namespace", func() {
		createPulledApplication(argoNamespace, "pinned", "c1")
		putTree("c2", argoNamespace, "pinned", guestbookTree(health.HealthStatusDegraded), 0)
		Consistently(func() error { _, err := served("pinned")(); return err }).Should(MatchError(isCacheMiss, "a cache miss"))

		putTree("c1", argoNamespace, "pinned", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("pinned")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		By("a change in the other cluster's tree changes nothing")
		putTree("c2", argoNamespace, "pinned", guestbookTree(health.HealthStatusMissing), 0)
		Consistently(served("pinned")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))

		By("retargeted to c2, the Application gets c2's tree")
		app := &argov1alpha1.Application{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNamespace, Name: "pinned"}, app)).To(Succeed())
		app.Annotations[apps.AnnotationOCMManagedCluster] = "c2"
		Expect(k8s.Update(ctx, app)).To(Succeed())
		Eventually(served("pinned")).Should(Equal(guestbookTree(health.HealthStatusMissing)))
	})

	It("reads and writes an unchanged tree once", func() {
		createPulledApplication(argoNamespace, "quiet", "c1")
		tree := putTree("c1", argoNamespace, "quiet", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("quiet")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		Eventually(treeGETs, "5s").WithArguments(tree).Should(Equal(1))
		gets, sets, before := treeGETs(tree), redisSets(), reconciles()

		By("the agent writing the same tree for a recreated spoke Application (same digest, new source UID)")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tree), tree)).To(Succeed())
		tree.Source.UID = "recreated"
		Expect(k8s.Update(ctx, tree)).To(Succeed())
		Eventually(reconciles).Should(BeNumerically(">", before))
		Consistently(func() []int { return []int{treeGETs(tree), redisSets()} }).Should(Equal([]int{gets, sets}))
	})

	It("deletes the key when the hub Application is deleted, unmarked, or its tree goes", func() {
		gone := createPulledApplication(argoNamespace, "gone", "c1")
		putTree("c1", argoNamespace, "gone", guestbookTree(health.HealthStatusHealthy), 0)
		unmarked := createPulledApplication(argoNamespace, "unmarked", "c1")
		putTree("c1", argoNamespace, "unmarked", guestbookTree(health.HealthStatusHealthy), 0)
		createPulledApplication(argoNamespace, "treeless", "c1")
		treeless := putTree("c1", argoNamespace, "treeless", guestbookTree(health.HealthStatusHealthy), 0)
		for _, key := range []string{"gone", "unmarked", "treeless"} {
			Eventually(served(key)).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		}
		deleted := metric("argocd_pull_resource_trees_deleted_total")

		Expect(k8s.Delete(ctx, gone)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(unmarked), unmarked)).To(Succeed())
		unmarked.Labels[apps.LabelPullToOCMManagedCluster] = "false"
		Expect(k8s.Update(ctx, unmarked)).To(Succeed())
		Expect(k8s.Delete(ctx, treeless)).To(Succeed())

		for _, key := range []string{"gone", "unmarked", "treeless"} {
			Eventually(func() error { _, err := served(key)(); return err }).Should(MatchError(isCacheMiss, "a cache miss"), key)
		}
		// Counted once Redis answered the delete, a moment after the key went.
		Eventually(func() float64 { return metric("argocd_pull_resource_trees_deleted_total") }).Should(BeNumerically(">=", deleted+3))
	})

	It("says on the hub Application when the agent cut the tree, once per tree", func() {
		app := createPulledApplication(argoNamespace, "big", "c1")
		tree := putTree("c1", argoNamespace, "big", guestbookTree(health.HealthStatusHealthy), 7)
		Eventually(served("big")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		Eventually(warnings(app, resourcetree.ReasonResourceTreeCapped)).Should(ConsistOf(
			And(ContainSubstring("cluster c1"), ContainSubstring("7 were left out"))))

		By("the same tree again (new source UID) says nothing new")
		before := reconciles()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tree), tree)).To(Succeed())
		tree.Source.UID = "recreated"
		Expect(k8s.Update(ctx, tree)).To(Succeed())
		Eventually(reconciles).Should(BeNumerically(">", before))
		Consistently(warnings(app, resourcetree.ReasonResourceTreeCapped)).Should(HaveLen(1))
	})

	It("says on the hub Application when Redis cannot be reached, counts it, and writes once Redis is back", func() {
		app := createPulledApplication(argoNamespace, "offline", "c1")
		putTree("c1", argoNamespace, "offline", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("offline")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		failures := metric("argocd_pull_resource_tree_failures_total", "reason", "redis")

		redisLink.SetDown(true)
		DeferCleanup(redisLink.SetDown, false)
		putTree("c1", argoNamespace, "offline", guestbookTree(health.HealthStatusDegraded), 0)
		Eventually(warnings(app, resourcetree.ReasonResourceTreeNotWritten)).Should(ContainElement(
			And(ContainSubstring("hub Argo CD's Redis at "+redisLink.Addr()), ContainSubstring("Retrying"))))
		Expect(metric("argocd_pull_resource_tree_failures_total", "reason", "redis")).To(BeNumerically(">", failures))
		Expect(served("offline")()).To(Equal(guestbookTree(health.HealthStatusHealthy)), "the last tree written stays")

		redisLink.SetDown(false)
		Eventually(served("offline")).Should(Equal(guestbookTree(health.HealthStatusDegraded)))
	})
})

var _ = Describe("The hub Argo CD's Redis password", func() {
	It("is read again from the argocd-redis Secret when Redis refuses the old one", func() {
		app := createPulledApplication(argoNamespace, "rotated", "c1")
		putTree("c1", argoNamespace, "rotated", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("rotated")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))

		By("rotating the password as an Argo CD admin would: the Secret, then Redis, dropping every connection")
		password, err := framework.NewRedisPassword()
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: argoNamespace, Name: "argocd-redis"}, secret)).To(Succeed())
		secret.Data["auth"] = []byte(password)
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		Expect(redisClient.ConfigSet(ctx, "requirepass", password).Err()).To(Succeed())
		_ = redisClient.ClientKillByFilter(ctx, "TYPE", "normal").Err() // kills this connection too
		connectTestClients(password)

		putTree("c1", argoNamespace, "rotated", guestbookTree(health.HealthStatusDegraded), 0)
		Eventually(served("rotated")).Should(Equal(guestbookTree(health.HealthStatusDegraded)))
		Expect(warnings(app, resourcetree.ReasonResourceTreeNotWritten)()).To(BeEmpty(), "a refused password read again is no failure")
	})
})

var _ = Describe("A restarted hub Argo CD Redis", func() {
	It("gets every tree back at the first write after it restarted", func() {
		createPulledApplication(argoNamespace, "kept", "c1")
		putTree("c1", argoNamespace, "kept", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("kept")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))

		By("restarting Redis on its address, as a restarted argocd-redis Pod comes back: empty")
		restartRedis()
		_, err := served("kept")()
		Expect(err).To(MatchError(isCacheMiss, "a cache miss"))

		By("another Application's tree changing")
		createPulledApplication(argoNamespace, "trigger", "c1")
		putTree("c1", argoNamespace, "trigger", guestbookTree(health.HealthStatusHealthy), 0)
		Eventually(served("trigger")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
		Eventually(served("kept")).Should(Equal(guestbookTree(health.HealthStatusHealthy)))
	})
})

// restartRedis stops the hub Redis and starts a new redis-server on the same address with
// the same password and no data, then reconnects the suite's own clients.
func restartRedis() {
	GinkgoHelper()
	_ = redisClient.ShutdownNoSave(ctx).Err() // the connection closes: no answer
	_, port, err := net.SplitHostPort(hubRedis.Addr)
	Expect(err).NotTo(HaveOccurred())
	portNumber, err := strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred())
	bin, err := framework.RedisServerBinary()
	Expect(err).NotTo(HaveOccurred())
	var cmd *exec.Cmd
	Eventually(func() error {
		// The old server may still hold the port for a moment.
		cmd = exec.Command(bin, framework.RedisServerArgs(portNumber, redisPassword, GinkgoT().TempDir())...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited: %v", err)
		case <-time.After(500 * time.Millisecond):
			// Later specs use it: the suite stops it.
			stopRestartedRedis = append(stopRestartedRedis, func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-exited
			})
			return nil
		}
	}).Should(Succeed())
	connectTestClients(redisPassword)
	Eventually(func() error { return redisClient.Ping(ctx).Err() }).Should(Succeed())
}
