package agent_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	benchApplications  = 500
	benchChangesPerSec = 10
	benchWindow        = 10 * time.Second
)

// BenchmarkAgent500Applications measures the agent, in this process, against its own hub
// and managed-cluster API servers: resident memory and CPU with 500 pulled Applications
// at steady state, then under 10 Application status changes per second. It prints
// figures and asserts none. CPU and RSS are the test process's, which is the agent plus
// a test client sending 10 updates per second; the API servers are other processes.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test ./test/integration/agent/ -run '^$' -bench Agent500 -benchtime 1x -timeout 20m
func BenchmarkAgent500Applications(b *testing.B) {
	benchmarkAgent(b, false)
}

// BenchmarkAgent500ApplicationsWithTrees is BenchmarkAgent500Applications with Argo CD 3's
// default: per-resource health in each Application's resource tree, which the agent reads
// from a real redis-server (one read per reconcile of an Application). Each tree holds the
// two resources, a ReplicaSet and a Pod; each status change comes with a new tree, written
// first as Argo CD does. The test client's tree writes count in its CPU.
func BenchmarkAgent500ApplicationsWithTrees(b *testing.B) {
	benchmarkAgent(b, true)
}

func benchmarkAgent(b *testing.B, withTrees bool) {
	ctx := context.Background()
	// The agent logs nothing at V(0) per Application; the API servers' start-up is noise here.
	ctrl.SetLogger(logr.Discard())
	hubServer, err := framework.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hubServer.Stop() })
	managedServer, err := framework.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = managedServer.Stop() })
	hub, managed := hubServer.Client, managedServer.Client
	for _, obj := range []client.Object{namespace(clusterName), managedClusterAddOn()} {
		must(b, hub.Create(ctx, obj))
	}
	for _, ns := range []string{argoNamespace, teamNamespace, addonNamespace} {
		must(b, managed.Create(ctx, namespace(ns)))
	}
	status := syncedHealthy
	var trees *benchTrees
	if withTrees {
		redisServer, err := framework.StartRedisServer(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = redisServer.Stop() })
		must(b, managed.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: resourcetree.DefaultRedisSecret},
			Data: map[string][]byte{"auth": []byte(redisServer.Password)}}))
		trees = newBenchTrees(redisServer)
		b.Cleanup(trees.close)
		status = func(rev string) argov1alpha1.ApplicationStatus {
			s := syncedHealthy(rev)
			s.ReconciledAt, s.ControllerNamespace = &finished, argoNamespace
			s.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
			for i := range s.Resources {
				s.Resources[i].Health = nil
			}
			return s
		}
		benchRedisAddress = redisServer.Addr
	}
	keys := make([]client.ObjectKey, benchApplications)
	for i := range keys {
		app := pulledApp(argoNamespace, fmt.Sprintf("app-%03d", i)).Build()
		must(b, managed.Create(ctx, app))
		keys[i] = client.ObjectKeyFromObject(app)
		if trees != nil {
			must(b, trees.write(app.Name, "rev-0"))
		}
		must(b, setStatus(ctx, managed, keys[i], status("rev-0")))
	}

	counted := framework.NewRequestCounter()
	a := startAgent(func(o *agent.Options) {
		o.HubConfig = counted.Wrap(hubServer.Config)
		o.ManagedConfig = rest.CopyConfig(managedServer.Config)
		o.RedisAddress = benchRedisAddress
	})
	b.Cleanup(func() { _ = a.stop() })

	startedAt := time.Now()
	for {
		list := &appsv1alpha1.ApplicationStatusReportList{}
		must(b, hub.List(ctx, list, client.InNamespace(clusterName)))
		if len(list.Items) == benchApplications {
			break
		}
		if time.Since(startedAt) > 5*time.Minute {
			b.Fatalf("%d of %d reports after 5 minutes", len(list.Items), benchApplications)
		}
		time.Sleep(500 * time.Millisecond)
	}
	toAllReports := time.Since(startedAt)
	time.Sleep(3 * time.Second) // let the initial burst settle before measuring

	writesSoFar := func() int { return counted.OfResource("applicationstatusreports") }
	cpuSoFar := func() float64 { return framework.ProcessCPUSeconds(os.Getpid()) }
	b.ResetTimer()
	for b.Loop() {
		// Steady state: nothing changes.
		writesBefore, cpuBefore, wallBefore := writesSoFar(), cpuSoFar(), time.Now()
		time.Sleep(benchWindow)
		b.ReportMetric(cpuMillisPerSecond(cpuSoFar()-cpuBefore, time.Since(wallBefore)), "steady-cpu-ms/s")
		b.ReportMetric(float64(writesSoFar()-writesBefore), "steady-writes")
		b.ReportMetric(rssMiB(b), "steady-rss-MiB")
		b.ReportMetric(heapMiB(), "steady-heap-MiB")
		b.ReportMetric(toAllReports.Seconds(), "s-to-500-reports")

		// Churn: 10 status changes per second, each to another Application.
		writesBefore, cpuBefore, wallBefore = writesSoFar(), cpuSoFar(), time.Now()
		tick := time.NewTicker(time.Second / benchChangesPerSec)
		changes := int(benchWindow.Seconds()) * benchChangesPerSec
		for i := range changes {
			<-tick.C
			rev := fmt.Sprintf("rev-%d", i+1)
			if trees != nil {
				must(b, trees.write(keys[i%len(keys)].Name, rev))
			}
			must(b, setStatus(ctx, managed, keys[i%len(keys)], status(rev)))
		}
		tick.Stop()
		// Let the last changes' coalescing window pass, so their writes are counted.
		time.Sleep(2 * agent.DefaultCoalesceWindow)
		b.ReportMetric(cpuMillisPerSecond(cpuSoFar()-cpuBefore, time.Since(wallBefore)), "churn-cpu-ms/s")
		b.ReportMetric(float64(writesSoFar()-writesBefore)/float64(changes), "churn-writes/change")
		b.ReportMetric(rssMiB(b), "churn-rss-MiB")
	}
}

// benchRedisAddress is the benchmark's Redis, empty without trees (nothing is read).
var benchRedisAddress string

// benchTrees writes resource trees as Argo CD's application controller does.
type benchTrees struct {
	rc   *redis.Client
	argo *appstate.Cache
}

func newBenchTrees(r *framework.RedisServer) *benchTrees {
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, Password: r.Password})
	return &benchTrees{rc: rc, argo: appstate.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(rc, time.Hour, cacheutil.RedisCompressionGZip)), time.Hour)}
}

func (t *benchTrees) close() { _ = t.rc.Close() }

// write stores the tree of the Application name: the guestbook's Service and Deployment,
// a ReplicaSet of the revision rev and its Pod, Progressing.
func (t *benchTrees) write(name, rev string) error {
	healthy := &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}
	dep := argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", UID: name + "-dep"}
	rs := argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "guestbook", Name: "guestbook-ui-" + rev, UID: name + "-rs-" + rev}
	return t.argo.SetAppResourcesTree(name, &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
		{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", UID: name + "-svc"}, Health: healthy},
		{ResourceRef: dep, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusProgressing, Message: "Waiting for rollout to finish"}},
		{ResourceRef: rs, ParentRefs: []argov1alpha1.ResourceRef{dep}, Health: healthy},
		{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "guestbook-ui-" + rev + "-x1", UID: name + "-pod-" + rev},
			ParentRefs: []argov1alpha1.ResourceRef{rs}, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusProgressing, Message: "ContainerCreating"}},
	}})
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// cpuMillisPerSecond is CPU milliseconds used per wall-clock second.
func cpuMillisPerSecond(cpuSeconds float64, wall time.Duration) float64 {
	return cpuSeconds * 1000 / wall.Seconds()
}

// heapMiB is the Go heap in use after a collection.
func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// rssMiB is this process's resident set size.
func rssMiB(b *testing.B) float64 {
	n, err := framework.ProcessRSS(os.Getpid())
	must(b, err)
	return float64(n) / (1 << 20)
}
