package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	benchWriteReports = 200
	benchWriteChanges = 2000
	// benchFieldOwner is the agent's field owner (pkg/spoke/reports' fieldOwner).
	benchFieldOwner = "argocd-pull-agent"
)

// reportWriteMethod writes a change of a report that exists on the hub: desired's content
// over previous, the report as the hub last answered it (resourceVersion included). It
// returns the report as the hub answers it now.
type reportWriteMethod struct {
	name   string
	change func(ctx context.Context, c client.Client, previous, desired *appsv1alpha1.ApplicationStatusReport) (*appsv1alpha1.ApplicationStatusReport, error)
}

var reportWriteMethods = []reportWriteMethod{
	{name: "apply", change: func(ctx context.Context, c client.Client, _, desired *appsv1alpha1.ApplicationStatusReport) (*appsv1alpha1.ApplicationStatusReport, error) {
		return benchApply(ctx, c, desired)
	}},
	{name: "merge-patch", change: func(ctx context.Context, c client.Client, previous, desired *appsv1alpha1.ApplicationStatusReport) (*appsv1alpha1.ApplicationStatusReport, error) {
		modified := withContentOf(previous, desired)
		return modified, c.Patch(ctx, modified, client.MergeFrom(previous), client.FieldOwner(benchFieldOwner))
	}},
	{name: "update", change: func(ctx context.Context, c client.Client, previous, desired *appsv1alpha1.ApplicationStatusReport) (*appsv1alpha1.ApplicationStatusReport, error) {
		modified := withContentOf(previous, desired)
		// The managed fields stay as they are (the agent would keep no copy of them).
		modified.ManagedFields = nil
		return modified, c.Update(ctx, modified, client.FieldOwner(benchFieldOwner))
	}},
}

// BenchmarkReportWrite measures the hub API server's CPU per report write for each way
// the agent can write a changed report: server-side apply of the whole report (field
// owner and force as the agent's), a JSON merge patch from the report last written, and
// an update (PUT) with the last resourceVersion. For each, in a namespace of its own on
// one kube-apiserver, it creates 200 reports of a guestbook-like Application with the
// agent's content (reports.DesiredReport) by apply, as the agent creates them, then writes
// 2,000 content changes one after the other (health Progressing with a new revision, then
// Healthy, alternating). It prints the kube-apiserver's CPU per change (its idle rate,
// measured first, taken off), the request body bytes and the wall time per change, and
// asserts nothing.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test ./test/integration/agent/ -run '^$' -bench ReportWrite -benchtime 1x -count 3 -timeout 30m
func BenchmarkReportWrite(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	hubServer, err := framework.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hubServer.Stop() })
	pid, _ := hubServer.PIDs()
	if pid == 0 {
		b.Fatal("no kube-apiserver process found")
	}
	var sent atomic.Int64
	cfg := framework.UnthrottledCountingSent(hubServer.Config, &sent)
	hub, err := client.New(cfg, client.Options{Scheme: hubServer.Scheme})
	must(b, err)

	// The idle rate is taken off: the API server's own loops keep running meanwhile; the
	// CRDs were just installed, so the server settles first.
	idleRate := framework.IdleCPURate(pid, 5*time.Second, 5*time.Second)
	b.Logf("kube-apiserver idle: %.1f CPU ms/s", idleRate*1000)

	// Each run starts its own API server; the order of the methods turns from run to run,
	// so that none always goes first on a fresh server.
	first := int(benchReportWriteRuns.Add(1) - 1)
	for b.Loop() {
		for m := range reportWriteMethods {
			method := reportWriteMethods[(first+m)%len(reportWriteMethods)]
			cpuPerWrite, bytesPerWrite, wallPerWrite := benchReportWrites(b, hub, pid, idleRate, &sent, method)
			b.ReportMetric(cpuPerWrite, method.name+"-apiserver-cpu-ms/write")
			b.ReportMetric(bytesPerWrite, method.name+"-request-B/write")
			b.ReportMetric(wallPerWrite, method.name+"-wall-ms/write")
			fmt.Printf("report write %-11s kube-apiserver %.3f CPU ms/write, %.0f request bytes/write, %.2f ms/write wall (%d changes of %d reports)\n",
				method.name, cpuPerWrite, bytesPerWrite, wallPerWrite, benchWriteChanges, benchWriteReports)
		}
	}
}

// benchReportWriteRuns counts the runs of BenchmarkReportWrite (-count).
var benchReportWriteRuns atomic.Int32

// benchReportWrites creates the reports of one method in a namespace of its own, then
// writes the changes with it, and returns the kube-apiserver's CPU milliseconds (idle
// rate taken off), the request body bytes and the wall milliseconds per change.
func benchReportWrites(b *testing.B, hub client.Client, pid int, idleRate float64, sent *atomic.Int64, method reportWriteMethod) (cpuPerWrite, bytesPerWrite, wallPerWrite float64) {
	ctx := context.Background()
	cluster := "bench-" + method.name
	must(b, hub.Create(ctx, namespace(cluster)))
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: managedClusterAddOn().ObjectMeta}
	mca.Namespace = cluster
	must(b, hub.Create(ctx, mca))
	owner := reports.AddonOwnerReference(mca)
	applications := make([]*argov1alpha1.Application, benchWriteReports)
	written := make([]*appsv1alpha1.ApplicationStatusReport, benchWriteReports)
	var err error
	for i := range applications {
		applications[i] = pulledApp(argoNamespace, fmt.Sprintf("app-%03d", i)).Build()
		applications[i].UID = types.UID(fmt.Sprintf("uid-%03d", i))
		applications[i].Status = benchStatus("rev-0", health.HealthStatusHealthy)
		written[i], err = benchApply(ctx, hub, withObservedAt(reports.DesiredReport(applications[i], cluster, owner)))
		must(b, err)
	}

	sentBefore, cpuBefore, wallBefore := sent.Load(), framework.ProcessCPUSeconds(pid), time.Now()
	for i := range benchWriteChanges {
		k, round := i%benchWriteReports, i/benchWriteReports+1
		// Odd rounds roll out a new revision (Progressing), even rounds finish it.
		status := benchStatus(fmt.Sprintf("rev-%d", (round+1)/2), health.HealthStatusProgressing)
		if round%2 == 0 {
			status = benchStatus(fmt.Sprintf("rev-%d", round/2), health.HealthStatusHealthy)
		}
		applications[k].Status = status
		desired := withObservedAt(reports.DesiredReport(applications[k], cluster, owner))
		written[k], err = method.change(ctx, hub, written[k], desired)
		must(b, err)
	}
	wall := time.Since(wallBefore)
	cpu := framework.ProcessCPUSeconds(pid) - cpuBefore - idleRate*wall.Seconds()

	// The last write of each report holds its last content.
	for k := range applications {
		got := &appsv1alpha1.ApplicationStatusReport{}
		must(b, hub.Get(ctx, client.ObjectKeyFromObject(written[k]), got))
		if got.Status.Health.Status != written[k].Status.Health.Status || got.Status.Sync.Revision != written[k].Status.Sync.Revision {
			b.Fatalf("report %s/%s holds %s %s, last written %s %s", got.Namespace, got.Name, got.Status.Health.Status, got.Status.Sync.Revision,
				written[k].Status.Health.Status, written[k].Status.Sync.Revision)
		}
	}
	return cpu * 1000 / benchWriteChanges, float64(sent.Load()-sentBefore) / benchWriteChanges,
		float64(wall.Microseconds()) / 1000 / benchWriteChanges
}

// benchStatus is the guestbook's status after syncing rev: h, its Deployment's health.
func benchStatus(rev string, h health.HealthStatusCode) argov1alpha1.ApplicationStatus {
	s := syncedHealthy(rev)
	s.Health.Status = h
	s.OperationState.Operation = argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: rev}}
	s.OperationState.SyncResult = &argov1alpha1.SyncOperationResult{Revision: rev}
	s.ReconciledAt = &finished
	s.Resources[1].Health = &argov1alpha1.HealthStatus{Status: h}
	if h == health.HealthStatusProgressing {
		s.Health.Message = "Waiting for rollout to finish: 1 old replicas are pending termination"
		s.Resources[1].Health.Message = s.Health.Message
	}
	return s
}

// withObservedAt sets desired's ObservedAt as the agent's write does.
func withObservedAt(desired *appsv1alpha1.ApplicationStatusReport) *appsv1alpha1.ApplicationStatusReport {
	desired.Status.ObservedAt.Time = time.Now().Truncate(time.Second)
	return desired
}

// withContentOf is previous with desired's labels, owner, source and status.
func withContentOf(previous, desired *appsv1alpha1.ApplicationStatusReport) *appsv1alpha1.ApplicationStatusReport {
	modified := previous.DeepCopy()
	for k, v := range desired.Labels {
		modified.Labels[k] = v
	}
	if desired.Labels[apps.LabelReportApplicationSet] == "" {
		delete(modified.Labels, apps.LabelReportApplicationSet)
	}
	modified.OwnerReferences = desired.OwnerReferences
	modified.Source, modified.Status = desired.Source, desired.Status
	return modified
}

// benchApply writes desired with server-side apply as the agent's applyReport does.
func benchApply(ctx context.Context, c client.Client, desired *appsv1alpha1.ApplicationStatusReport) (*appsv1alpha1.ApplicationStatusReport, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(benchFieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	got := &appsv1alpha1.ApplicationStatusReport{}
	return got, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, got)
}
