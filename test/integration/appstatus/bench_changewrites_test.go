package appstatus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appwrite"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	benchApplications = 200
	benchChanges      = 2000
	benchCluster      = "bench"
)

// changeWrite is one of the hub writes a status change on a managed cluster causes.
type changeWrite struct {
	name  string
	write func(ctx context.Context, f *changeFleet, k int, now time.Time) error
}

// changeWrites are the three hub writes a status change can take: OCM's work agent
// writes the status feedback, this project's agent its ApplicationStatusReport, and the
// application status controller mirrors the status onto the hub Application.
var changeWrites = []changeWrite{
	{name: "feedback", write: func(ctx context.Context, f *changeFleet, k int, now time.Time) error {
		return framework.WriteWorkAgentStatus(ctx, f.c, client.ObjectKeyFromObject(f.works[k]), f.works[k].Generation, f.spoke[k], now)
	}},
	{name: "report", write: func(ctx context.Context, f *changeFleet, k int, now time.Time) error {
		_, err := reports.PublishReport(ctx, f.c, f.spoke[k], benchCluster, f.owner, now)
		return err
	}},
	{name: "mirror", write: func(ctx context.Context, f *changeFleet, k int, now time.Time) error {
		_, written, err := appwrite.PatchApplication(ctx, f.c, f.c, nil, f.hub[k], func(app *argov1alpha1.Application) bool {
			mirrorShape(&app.Status, &f.spoke[k].Status, metav1.NewTime(now))
			return true
		})
		if err == nil && written == nil {
			err = fmt.Errorf("the mirror of Application %s wrote nothing", f.hub[k].Name)
		}
		if written != nil {
			f.hub[k] = written
		}
		return err
	}},
}

// BenchmarkChangeWrites measures what each of the hub writes one status change needs
// costs the hub API server, alone, on an otherwise idle kube-apiserver: the work agent's
// status feedback (a JSON merge patch of the ManifestWork's status, framework.WriteWorkAgentStatus),
// the agent's report (reports.PublishReport: server-side apply) and the hub Application's
// mirror (appwrite.PatchApplication, the application status controller's write, with the
// fields the mirror sets). 200 hub Applications are marked for one cluster, their
// ManifestWorks built by propagation.BuildManifestWork, their reports and feedback
// written once; the manager's watches are open (its cache options, on a connection of its
// own) so that each write's watch events are sent as in a hub. Then per write, 2,000
// changes one after the other (a new revision Progressing, then Healthy, alternating).
// It prints the kube-apiserver's CPU per write (its idle rate, measured first, taken off),
// the request bytes and the wall time, and asserts nothing. The sum is what the writes a
// change needs cost before any load: make bench-scale's figure per change adds the
// MulticlusterApplicationSetReport writes (coalesced over several changes) and what the
// load adds to each write. BENCH_WITHOUT_WATCHES=1
// leaves the manager's watches closed.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test ./test/integration/appstatus/ -run '^$' -bench ChangeWrites -benchtime 1x -count 3 -timeout 30m
func BenchmarkChangeWrites(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server, err := framework.StartAPIServer()
	benchMust(b, err)
	b.Cleanup(func() { _ = server.Stop() })
	pid, _ := server.PIDs()
	if pid == 0 {
		b.Fatal("no kube-apiserver process found")
	}
	var sent atomic.Int64
	cfg := framework.UnthrottledCountingSent(manager.OwnConnection(server.Config), &sent)
	c, err := client.New(cfg, client.Options{Scheme: server.Scheme})
	benchMust(b, err)
	f := newChangeFleet(ctx, b, c)
	if os.Getenv("BENCH_WITHOUT_WATCHES") == "" {
		benchMust(b, watchAsTheManager(ctx, server))
	}

	// The server settles after the set-up; its idle rate is then taken off.
	idleRate := framework.IdleCPURate(pid, 5*time.Second, 5*time.Second)
	b.Logf("kube-apiserver idle: %.1f CPU ms/s", idleRate*1000)

	// The order of the writes turns from run to run, so that none always goes first.
	first := int(benchChangeWritesRuns.Add(1) - 1)
	for b.Loop() {
		var total float64
		for w := range changeWrites {
			cw := changeWrites[(first+w)%len(changeWrites)]
			sentBefore, cpuBefore, start := sent.Load(), framework.ProcessCPUSeconds(pid), time.Now()
			for i := range benchChanges {
				k, round := i%benchApplications, i/benchApplications+1
				f.spoke[k].Status = spokeStatus(round, start)
				benchMust(b, cw.write(ctx, f, k, time.Now()))
			}
			wall := time.Since(start)
			cpu := (framework.ProcessCPUSeconds(pid) - cpuBefore - idleRate*wall.Seconds()) * 1000 / benchChanges
			total += cpu
			bytes := float64(sent.Load()-sentBefore) / benchChanges
			b.ReportMetric(cpu, cw.name+"-apiserver-cpu-ms/write")
			b.ReportMetric(bytes, cw.name+"-request-B/write")
			fmt.Printf("%-8s kube-apiserver %.3f CPU ms/write, %.0f request bytes/write, %.2f ms/write wall (%d changes of %d Applications)\n",
				cw.name, cpu, bytes, float64(wall.Microseconds())/1000/benchChanges, benchChanges, benchApplications)
		}
		b.ReportMetric(total, "all-apiserver-cpu-ms/change")
		fmt.Printf("all three: kube-apiserver %.3f CPU ms per change\n", total)
	}
}

// benchChangeWritesRuns counts the runs of BenchmarkChangeWrites (-count).
var benchChangeWritesRuns atomic.Int32

// changeFleet is one cluster's pulled Applications: the hub Applications as last written,
// their ManifestWorks and the spoke copies the cluster's Argo CD reports on.
type changeFleet struct {
	c     client.Client
	owner metav1.OwnerReference
	hub   []*argov1alpha1.Application
	works []*workv1.ManifestWork
	spoke []*argov1alpha1.Application
}

// newChangeFleet creates the hub side of benchApplications Applications delivered to
// benchCluster, each reported once by the agent and the work agent.
func newChangeFleet(ctx context.Context, b *testing.B, c client.Client) *changeFleet {
	for _, ns := range []string{argoNamespace, benchCluster} {
		benchMust(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: benchCluster, Name: apps.AddonName}}
	benchMust(b, c.Create(ctx, mca))
	f := &changeFleet{c: c, owner: reports.AddonOwnerReference(mca)}
	for i := range benchApplications {
		app := builders.Application(fmt.Sprintf("guestbook-%03d", i)).Pulled().Cluster(benchCluster).
			SyncPolicy(argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true}}).Build()
		benchMust(b, c.Create(ctx, app))
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(argov1alpha1.ApplicationSchemaGroupVersionKind)
		benchMust(b, c.Get(ctx, client.ObjectKeyFromObject(app), stored))
		mw, err := propagation.BuildManifestWork(stored, requests.Carried{})
		benchMust(b, err)
		benchMust(b, c.Create(ctx, mw))
		spoke := &argov1alpha1.Application{}
		benchMust(b, json.Unmarshal(mw.Spec.Workload.Manifests[0].Raw, spoke))
		spoke.UID = types.UID(fmt.Sprintf("spoke-%03d", i))
		spoke.Status = spokeStatus(0, time.Now())
		f.hub, f.works, f.spoke = append(f.hub, app), append(f.works, mw), append(f.spoke, spoke)
		k := len(f.hub) - 1
		for _, w := range changeWrites {
			benchMust(b, w.write(ctx, f, k, time.Now()))
		}
	}
	return f
}

// watchAsTheManager opens the watches the manager's cache keeps on the written kinds,
// with its cache options, on a connection of their own, until ctx is done.
func watchAsTheManager(ctx context.Context, server *framework.APIServer) error {
	opts, err := manager.WithOwnWatchConnection(manager.CacheOptionsFor(nil), server.Config)
	if err != nil {
		return err
	}
	opts.Scheme = server.Scheme
	watches, err := cache.New(server.Config, opts)
	if err != nil {
		return err
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(argov1alpha1.ApplicationSchemaGroupVersionKind)
	for _, obj := range []client.Object{&argov1alpha1.Application{}, stored, &workv1.ManifestWork{}, &appsv1alpha1.ApplicationStatusReport{}} {
		if _, err := watches.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	go func() { _ = watches.Start(ctx) }()
	if !watches.WaitForCacheSync(ctx) {
		return fmt.Errorf("the watches did not sync")
	}
	return nil
}

// spokeStatus is the spoke Application's status in a round of changes: odd rounds sync a
// new revision, Progressing, even rounds finish it, Healthy; round 0 is the first sync.
func spokeStatus(round int, at time.Time) argov1alpha1.ApplicationStatus {
	h := health.HealthStatusHealthy
	if round%2 == 1 {
		h = health.HealthStatusProgressing
	}
	return framework.SyncedGuestbookStatus(fmt.Sprintf("%040x", (round+1)/2), h, at)
}

// mirrorShape sets on hub what the application status controller mirrors of spoke: the
// scalars (health with its transition time, sync, the operation's phase, start, message
// and finish) and the resources.
func mirrorShape(hub, spoke *argov1alpha1.ApplicationStatus, now metav1.Time) {
	hub.Health = argov1alpha1.HealthStatus{Status: spoke.Health.Status, LastTransitionTime: &now}
	hub.Sync.Status, hub.Sync.Revision = spoke.Sync.Status, spoke.Sync.Revision
	op := spoke.OperationState
	hub.OperationState = &argov1alpha1.OperationState{Phase: op.Phase, StartedAt: op.StartedAt, Message: op.Message, FinishedAt: op.FinishedAt}
	hub.Resources = spoke.Resources
}

func benchMust(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
