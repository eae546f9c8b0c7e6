package agent_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/agent"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
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
	keys := make([]client.ObjectKey, benchApplications)
	for i := range keys {
		app := pulledApp(argoNamespace, fmt.Sprintf("app-%03d", i)).Build()
		must(b, managed.Create(ctx, app))
		keys[i] = client.ObjectKeyFromObject(app)
		must(b, setStatus(ctx, managed, keys[i], syncedHealthy("rev-0")))
	}

	counted := framework.NewRequestCounter()
	a := startAgent(func(o *agent.Options) {
		o.HubConfig = counted.Wrap(hubServer.Config)
		o.ManagedConfig = rest.CopyConfig(managedServer.Config)
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
			must(b, setStatus(ctx, managed, keys[i%len(keys)], syncedHealthy(fmt.Sprintf("rev-%d", i+1))))
		}
		tick.Stop()
		// Let the last changes' coalescing window pass, so their writes are counted.
		time.Sleep(2 * agent.DefaultCoalesceWindow)
		b.ReportMetric(cpuMillisPerSecond(cpuSoFar()-cpuBefore, time.Since(wallBefore)), "churn-cpu-ms/s")
		b.ReportMetric(float64(writesSoFar()-writesBefore)/float64(changes), "churn-writes/change")
		b.ReportMetric(rssMiB(b), "churn-rss-MiB")
	}
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
