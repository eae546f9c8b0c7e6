//go:build e2e

// Package faults_test exercises the fleet's fault-injection primitives (test/fleet:
// faults.go, pullmodel_faults.go, supervisor.go, tcpproxy.go) on a pull fleet of two
// clusters with two manager replicas, agents behind hub proxies and the supervisor on:
// leader takeover after a SIGKILL, an agent killed and started again, an agent's hub link
// cut, and a 20 s outage of the hub's kube-apiserver.
//
// Run it with `go test -tags e2e -v -count=1 ./test/fleet/faults_test` after `make envtest
// argocd` (it builds argocd-pull-addon unless ARGOCD_PULL_ADDON_BINARY names one; takes
// under 3 minutes). Behind the e2e build tag; TestMain re-executes the test binary in a
// private network namespace. FAULTS_KEEP_DIR=1 keeps the fleet's
// directory (every process's log) after a passing run.
package faults_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(fleet.RunInPrivateNetNS(m))
}

// hubOutage is how long the hub's kube-apiserver stays down: longer than the manager's
// lease renew deadline (10 s), so the leader loses its lease and exits.
const hubOutage = 20 * time.Second

func TestFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "faults-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet directory (logs): %s", dir)
	if err := fleet.KlogToFile(filepath.Join(dir, "ocm.log")); err != nil {
		t.Fatal(err)
	}
	pf, err := fleet.StartPullFleet(ctx, fleet.PullFleetOptions{
		Fleet: fleet.FleetOptions{
			Clusters: 2, Dir: dir, WorkStatusSyncInterval: 5 * time.Second,
			AddOnLeaseDurationSeconds: 20, AddOnLeaseSyncInterval: 5 * time.Second,
		},
		AppResync: 10 * time.Second,
		PullModel: fleet.PullModelOptions{ManagerReplicas: 2, AgentHubProxy: true, RestartExited: true},
		Step:      func(name string, took time.Duration) { t.Logf("%s: %s", name, took.Round(100*time.Millisecond)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pf.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
		if !t.Failed() && os.Getenv("FAULTS_KEEP_DIR") == "" {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("the fleet directory %s keeps every process's log", dir)
		}
	}()
	pull, hub := pf.Pull, pf.Hub.APIServer.Client
	if n := pull.ManagerReplicas(); n != 2 {
		t.Fatalf("ManagerReplicas() = %d, want 2", n)
	}

	t.Run("the other replica takes over after the leader is killed", func(t *testing.T) {
		leader := eventuallyLeader(ctx, t, pull, func(int) bool { return true })
		killed := time.Now()
		if err := pull.KillManager(leader); err != nil {
			t.Fatal(err)
		}
		next := eventuallyLeader(ctx, t, pull, func(r int) bool { return r != leader })
		t.Logf("replica %d took over from the killed replica %d in %s", next, leader, time.Since(killed).Round(100*time.Millisecond))
		if err := pull.StartManager(ctx, leader); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if got, err := pull.Leader(); err != nil || got != next {
			t.Errorf("after replica %d started again, Leader() = %d, %v; want %d", leader, got, err, next)
		}
		noErr(t, pf)
	})

	t.Run("an agent killed stays down until started", func(t *testing.T) {
		if err := pull.KillAgent("cluster1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // past the supervisor's restart delay
		if n := pull.Restarts()["agent-cluster1"]; n != 0 {
			t.Errorf("the supervisor restarted the killed agent (%d times)", n)
		}
		noErr(t, pf)
		if err := pull.StartAgent(ctx, "cluster1", ""); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("an agent that crashes is started again", func(t *testing.T) {
		pids := children()["argocd-pull-addon-agent-cluster1"]
		if len(pids) != 1 {
			t.Fatalf("agent processes of cluster1: %v", pids)
		}
		// Not through KillAgent: as if it crashed.
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		crashed := time.Now()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return pull.Restarts()["agent-cluster1"] == 1, nil
		}); err != nil {
			t.Fatalf("the crashed agent of cluster1 was not started again: restarts %v", pull.Restarts())
		}
		t.Logf("the crashed agent of cluster1 is up again after %s", time.Since(crashed).Round(100*time.Millisecond))
		noErr(t, pf)
	})

	t.Run("the addon stays available while an agent's hub link is cut", func(t *testing.T) {
		// The agent's hub kubeconfig points at its proxy, not at the hub.
		kc, err := clientcmd.LoadFromFile(filepath.Join(pull.Dir, "cluster2-agent", "hub-kubeconfig", "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		server, err := url.Parse(kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)
		if err != nil {
			t.Fatal(err)
		}
		if hubHost := strings.TrimSuffix(strings.TrimPrefix(pf.Hub.APIServer.Config.Host, "https://"), "/"); server.Host == hubHost {
			t.Fatalf("the agent of cluster2 reaches the hub at %s directly, not through a proxy", hubHost)
		}
		hubRequests := func(code string) float64 {
			m, err := framework.ScrapeMetrics(pull.AgentMetricsURL("cluster2"))
			if err != nil {
				t.Fatal(err)
			}
			return m.Value("rest_client_requests_total", "host", server.Host, "code", code)
		}
		failedBefore := hubRequests("<error>")
		if err := pull.SetAgentHubLink("cluster2", false); err != nil {
			t.Fatal(err)
		}
		// The lease window is 5 x 20 s, and the agent withholds a renewal only at its
		// once-a-minute health check: 30 s of cut leave the addon Available.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			if err := hub.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: fleet.PullAddonName}, mca); err != nil {
				t.Fatal(err)
			}
			if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
				t.Fatalf("the addon of cluster2 became unavailable with its agent's hub link cut: %v", mca.Status.Conditions)
			}
			time.Sleep(2 * time.Second)
		}
		failed := hubRequests("<error>")
		if failed <= failedBefore {
			t.Errorf("no request of the agent to the hub failed during the cut (%v failed before, %v after)", failedBefore, failed)
		}
		succeeded := hubRequests("200")
		if err := pull.SetAgentHubLink("cluster2", true); err != nil {
			t.Fatal(err)
		}
		restored := time.Now()
		if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			return hubRequests("200") > succeeded, nil
		}); err != nil {
			t.Errorf("the agent of cluster2 makes no successful hub request a minute after its link was restored")
		}
		t.Logf("the agent's hub requests: %v failed during the 30 s cut; one succeeded %s after the link was restored",
			failed-failedBefore, time.Since(restored).Round(100*time.Millisecond))
		if n := pull.Restarts()["agent-cluster2"]; n != 0 {
			t.Errorf("the agent of cluster2 was restarted %d times", n)
		}
		noErr(t, pf)
	})

	t.Run("the hub API server comes back after an outage", func(t *testing.T) {
		before := childNames()
		auditSize := fileSize(t, pf.Hub.Audit.Path)
		if err := pf.Hub.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		if err := hub.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}); err == nil {
			t.Error("the hub answers with its API server stopped")
		}
		time.Sleep(hubOutage - time.Since(stopped))
		if err := pf.Hub.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("the hub API server is ready again %s after it stopped", time.Since(stopped).Round(100*time.Millisecond))
		if err := hub.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}); err != nil {
			t.Fatalf("the restarted hub does not answer: %v", err)
		}
		leader := eventuallyLeader(ctx, t, pull, func(int) bool { return true })
		t.Logf("replica %d leads %s after the hub API server stopped; restarts: %v", leader, time.Since(stopped).Round(100*time.Millisecond), pull.Restarts())
		// The manager's requests to the restarted server land in the same audit log.
		if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			return fileSize(t, pf.Hub.Audit.Path) > auditSize, nil
		}); err != nil {
			t.Errorf("the restarted hub API server does not append to %s", pf.Hub.Audit.Path)
		}
		if refused, err := pull.RefusedManagerRequests(); err != nil || len(refused) > 0 {
			t.Errorf("RefusedManagerRequests() = %v, %v", refused, err)
		}
		time.Sleep(10 * time.Second)
		// Every process of the fleet runs again (the restarted manager replica and
		// kube-apiserver under the same names): none ended for good with the outage.
		if after := childNames(); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("child processes before the outage: %v\nafter: %v", before, after)
		}
		noErr(t, pf)
		t.Logf("restarts: %v", pull.Restarts())
	})
}

// eventuallyLeader waits for a manager replica to lead that ok accepts.
func eventuallyLeader(ctx context.Context, t *testing.T, pull *fleet.PullModel, ok func(int) bool) int {
	t.Helper()
	leader, last := -1, error(nil)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		leader, last = pull.Leader()
		return leader >= 0 && ok(leader), nil
	}); err != nil {
		t.Fatalf("no expected manager replica leads (last: %d, %v)", leader, last)
	}
	return leader
}

func noErr(t *testing.T, pf *fleet.PullFleet) {
	t.Helper()
	if err := pf.Err(); err != nil {
		t.Errorf("the fleet reports: %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// children are this process's running children by name (Argo CD's components and ours
// by their ARGOCD_BINARY_NAME).
func children() map[string][]int {
	self := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	byName := map[string][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != self || fields[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		name := filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0])
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "ARGOCD_BINARY_NAME="); ok {
				name = v
			}
		}
		byName[name] = append(byName[name], pid)
	}
	return byName
}

// childNames names this process's running children, one entry per process, sorted: to
// see which one an outage ended.
func childNames() []string {
	var names []string
	for name, pids := range children() {
		for range pids {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
