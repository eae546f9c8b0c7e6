package agent

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
)

// hubAnswer is a hub reader that answers every Get with answer, after checking that the
// request is the hub check's: the cluster's own ManagedClusterAddOn, under a deadline.
type hubAnswer struct {
	t      *testing.T
	answer func(ctx context.Context, obj client.Object) error
}

func (h hubAnswer) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	h.t.Helper()
	if _, ok := obj.(*addonv1alpha1.ManagedClusterAddOn); !ok {
		h.t.Errorf("the hub check reads a %T, want a ManagedClusterAddOn", obj)
	}
	if want := (client.ObjectKey{Namespace: "c1", Name: apps.AddonName}); key != want {
		h.t.Errorf("the hub check reads %s, want %s", key, want)
	}
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > hubCheckTimeout {
		h.t.Errorf("the hub check has no deadline of at most %s (deadline set: %v)", hubCheckTimeout, ok)
	}
	return h.answer(ctx, obj)
}

func (h hubAnswer) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the hub check does not list")
}

var addonResource = schema.GroupResource{Group: addonv1alpha1.GroupName, Resource: "managedclusteraddons"}

// TestHubWorks is the hub half of the lease gate: which answers of the hub let the agent
// renew its Lease, what the owner of the reports becomes, and what the metrics say.
func TestHubWorks(t *testing.T) {
	found := func(_ context.Context, obj client.Object) error {
		obj.(*addonv1alpha1.ManagedClusterAddOn).ObjectMeta = metav1.ObjectMeta{Namespace: "c1", Name: apps.AddonName, UID: "new-uid"}
		return nil
	}
	fails := func(err error) func(context.Context, client.Object) error {
		return func(context.Context, client.Object) error { return err }
	}
	tests := map[string]struct {
		answer      func(context.Context, client.Object) error
		wantHealthy bool
		// wantOwnerUID is the owner of the reports after the check: "old-uid" is the one
		// known before it, "" none.
		wantOwnerUID string
	}{
		"the hub returns the ManagedClusterAddOn": {answer: found, wantHealthy: true, wantOwnerUID: "new-uid"},
		// The hub answers and trusts the credentials; the addon is being disabled.
		"the ManagedClusterAddOn is not found": {
			answer: fails(apierrors.NewNotFound(addonResource, apps.AddonName)), wantHealthy: true, wantOwnerUID: ""},
		"the hub rejects the credentials": {
			answer: fails(apierrors.NewUnauthorized("certificate expired")), wantOwnerUID: "old-uid"},
		"the hub forbids the read": {
			answer: fails(apierrors.NewForbidden(addonResource, apps.AddonName, errors.New("no RBAC"))), wantOwnerUID: "old-uid"},
		"the hub is overloaded": {
			answer: fails(apierrors.NewServiceUnavailable("etcd leader changed")), wantOwnerUID: "old-uid"},
		"the hub refuses connections": {
			answer: fails(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), wantOwnerUID: "old-uid"},
		"the hub does not answer before the deadline": {
			answer: fails(context.DeadlineExceeded), wantOwnerUID: "old-uid"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			reader := hubAnswer{t: t, answer: tt.answer}
			owner := reports.NewAddonOwner(reader, "c1")
			owner.Observe(&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: apps.AddonName, UID: "old-uid"}}, nil)
			h := &healthChecks{hubReader: reader, clusterName: "c1", owner: owner}
			before := leaseCheckCounts(t)

			if got := h.hubWorks(); got != tt.wantHealthy {
				t.Errorf("hubWorks() = %v, want %v", got, tt.wantHealthy)
			}
			wantGauge, wantResult := 0.0, leaseCheckFailed
			if tt.wantHealthy {
				wantGauge, wantResult = 1, leaseCheckPassed
			}
			expectCounted(t, before, checkResult{leaseCheckHub, wantResult})
			if got := gaugeValue(t, "argocd_pull_agent_hub_reachable"); got != wantGauge {
				t.Errorf("argocd_pull_agent_hub_reachable = %v, want %v", got, wantGauge)
			}
			// The owner known after the check; with none known, Reference reads the hub
			// again, which answers as it did.
			gotUID := ""
			refCtx, cancel := context.WithTimeout(context.Background(), hubCheckTimeout)
			defer cancel()
			if ref, err := owner.Reference(refCtx); err == nil {
				gotUID = string(ref.UID)
			}
			if gotUID != tt.wantOwnerUID {
				t.Errorf("owner of the reports after the check: UID %q, want %q", gotUID, tt.wantOwnerUID)
			}
		})
	}
}

// TestHubWorksAgain: the check has no memory that keeps the Lease withheld once the hub
// answers again, nor one that keeps renewing it once the hub stops answering.
func TestHubWorksAgain(t *testing.T) {
	var down bool
	reader := hubAnswer{t: t, answer: func(context.Context, client.Object) error {
		if down {
			return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return nil
	}}
	h := &healthChecks{hubReader: reader, clusterName: "c1", owner: reports.NewAddonOwner(reader, "c1")}
	for i, step := range []struct{ down, want bool }{{false, true}, {true, false}, {true, false}, {false, true}} {
		down = step.down
		before := leaseCheckCounts(t)
		if got := h.hubWorks(); got != step.want {
			t.Errorf("check %d (hub down: %v): hubWorks() = %v, want %v", i, step.down, got, step.want)
		}
		want := checkResult{leaseCheckHub, leaseCheckFailed}
		if step.want {
			want.result = leaseCheckPassed
		}
		expectCounted(t, before, want)
	}
}

// syncedCache is a cache whose informers have synced, or not.
type syncedCache struct {
	cache.Cache
	t      *testing.T
	synced bool
}

func (c syncedCache) WaitForCacheSync(ctx context.Context) bool {
	if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > cacheSyncCheckTimeout {
		c.t.Errorf("the cache check has no deadline of at most %s", cacheSyncCheckTimeout)
	}
	return c.synced
}

func TestCachesSynced(t *testing.T) {
	tests := map[string]struct {
		managed, hub bool
		want         bool
	}{
		"both synced":                     {managed: true, hub: true, want: true},
		"the managed cluster's not yet":   {managed: false, hub: true},
		"the hub's not yet":               {managed: true, hub: false},
		"neither (the agent is starting)": {},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			h := &healthChecks{managed: syncedCache{t: t, synced: tt.managed}, hubCache: syncedCache{t: t, synced: tt.hub}}
			before := leaseCheckCounts(t)
			if got := h.cachesSynced(); got != tt.want {
				t.Errorf("cachesSynced() = %v, want %v", got, tt.want)
			}
			want := checkResult{leaseCheckInformers, leaseCheckFailed}
			if tt.want {
				want.result = leaseCheckPassed
			}
			expectCounted(t, before, want)
		})
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

// TestReportWriteHealth: which histories of report writes count against the lease. Each
// step happens a given time after the previous one; the grace is two minutes.
func TestReportWriteHealth(t *testing.T) {
	refused := errors.New(`admission webhook denied the request: reports are frozen`)
	type step struct {
		after time.Duration
		// op is "ok", "fail" or "settled" (the reconcile ended without a failed write).
		op, report string
	}
	tests := map[string]struct {
		steps       []step
		wantFailing bool
	}{
		"idle: nothing written": {},
		"every write succeeds": {
			steps: []step{{0, "ok", "a"}, {10 * time.Minute, "ok", "b"}}},
		"one write refused, within the grace": {
			steps: []step{{0, "ok", "a"}, {time.Minute, "fail", "a"}, {time.Minute, "fail", "a"}}},
		"every write refused for longer than the grace": {
			steps:       []step{{0, "ok", "a"}, {time.Minute, "fail", "a"}, {time.Minute, "fail", "b"}, {time.Minute + time.Second, "fail", "a"}},
			wantFailing: true},
		// The grace runs from the first failure, not from the last success: an agent idle
		// for an hour whose first write is refused gets the whole grace.
		"refused after a long idle time, within the grace": {
			steps: []step{{0, "ok", "a"}, {time.Hour, "fail", "a"}, {time.Minute, "fail", "a"}}},
		"refused, then written: the streak is over": {
			steps: []step{{0, "fail", "a"}, {time.Minute, "fail", "a"}, {2 * time.Minute, "ok", "a"}}},
		// Another report written proves the hub takes writes.
		"one report refused, another written": {
			steps: []step{{0, "fail", "a"}, {2 * time.Minute, "ok", "b"}, {time.Second, "fail", "a"}}},
		// The Application whose write was refused was deleted before a retry got through:
		// nothing is left to write.
		"the refused report settled without a write": {
			steps: []step{{0, "fail", "a"}, {time.Minute, "settled", "a"}, {5 * time.Minute, "settled", "b"}}},
		"one refused report settled, another still refused": {
			steps:       []step{{0, "fail", "a"}, {0, "fail", "b"}, {time.Minute, "settled", "a"}, {2 * time.Minute, "fail", "b"}},
			wantFailing: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			w := newReportWriteHealth(2*time.Minute, clock.Now)
			for _, s := range tt.steps {
				clock.advance(s.after)
				switch s.op {
				case "ok":
					w.Succeeded(s.report)
				case "fail":
					w.Failed(s.report, refused)
				case "settled":
					w.Settled(s.report)
				}
			}
			since, err := w.failing()
			if got := !since.IsZero(); got != tt.wantFailing {
				t.Fatalf("failing since %v (error %v), want failing: %v", since, err, tt.wantFailing)
			}
			if tt.wantFailing && !errors.Is(err, refused) {
				t.Errorf("last error %v, want %v", err, refused)
			}
		})
	}
}

// TestReportsWritten is the reports half of the lease gate: it fails once the writes
// have failed past the grace, passes again once one succeeds, and each run is counted.
func TestReportsWritten(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := &healthChecks{writes: newReportWriteHealth(2*time.Minute, clock.Now)}
	for i, step := range []struct {
		after time.Duration
		op    string
		want  bool
	}{
		{0, "", true},
		{0, "fail", true},
		{2*time.Minute + time.Second, "fail", false},
		{time.Minute, "", false},
		{0, "ok", true},
	} {
		clock.advance(step.after)
		switch step.op {
		case "fail":
			h.writes.Failed("argocd.guestbook", apierrors.NewForbidden(schema.GroupResource{Resource: "applicationstatusreports"}, "argocd.guestbook", errors.New("no RBAC")))
		case "ok":
			h.writes.Succeeded("argocd.guestbook")
		}
		before := leaseCheckCounts(t)
		if got := h.reportsWritten(); got != step.want {
			t.Errorf("step %d: reportsWritten() = %v, want %v", i, got, step.want)
		}
		want := checkResult{leaseCheckReports, leaseCheckFailed}
		if step.want {
			want.result = leaseCheckPassed
		}
		expectCounted(t, before, want)
	}
}

// TestLeaseUpdater runs addon-framework's lease updater as the agent builds it, once (its
// first run starts at once; the next would be a minute later): the Lease is created only
// when every check passes, the hub is not asked while the informers have not synced, and
// the counter shows each check the updater made.
func TestLeaseUpdater(t *testing.T) {
	found := func(context.Context, client.Object) error { return nil }
	refused := func(context.Context, client.Object) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	tests := map[string]struct {
		synced    bool
		hubAnswer func(context.Context, client.Object) error
		// writesRefusedFor is how long every report write has been refused; zero: none was.
		writesRefusedFor time.Duration
		// wantChecks are the checks the run made, in order, with their results.
		wantChecks []checkResult
		wantLease  bool
	}{
		"healthy: the Lease is created": {
			synced: true, hubAnswer: found,
			wantChecks: []checkResult{{leaseCheckInformers, leaseCheckPassed}, {leaseCheckHub, leaseCheckPassed}, {leaseCheckReports, leaseCheckPassed}},
			wantLease:  true},
		"report writes refused within the grace: the Lease is created": {
			synced: true, hubAnswer: found, writesRefusedFor: time.Minute,
			wantChecks: []checkResult{{leaseCheckInformers, leaseCheckPassed}, {leaseCheckHub, leaseCheckPassed}, {leaseCheckReports, leaseCheckPassed}},
			wantLease:  true},
		"report writes refused past the grace: no Lease": {
			synced: true, hubAnswer: found, writesRefusedFor: 3 * time.Minute,
			wantChecks: []checkResult{{leaseCheckInformers, leaseCheckPassed}, {leaseCheckHub, leaseCheckPassed}, {leaseCheckReports, leaseCheckFailed}}},
		"the hub does not answer: no Lease": {
			synced: true, hubAnswer: refused, writesRefusedFor: 3 * time.Minute,
			wantChecks: []checkResult{{leaseCheckInformers, leaseCheckPassed}, {leaseCheckHub, leaseCheckFailed}}},
		"the informers have not synced: no Lease, the hub not asked": {
			synced: false, hubAnswer: found,
			wantChecks: []checkResult{{leaseCheckInformers, leaseCheckFailed}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var hubAsked atomic.Bool
			reader := hubAnswer{t: t, answer: func(ctx context.Context, obj client.Object) error {
				hubAsked.Store(true)
				return tt.hubAnswer(ctx, obj)
			}}
			clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			writes := newReportWriteHealth(DefaultReportFailureGrace, clock.Now)
			if tt.writesRefusedFor > 0 {
				writes.Failed("argocd.guestbook", errors.New("admission refused"))
				clock.advance(tt.writesRefusedFor)
			}
			h := &healthChecks{
				managed: syncedCache{t: t, synced: true}, hubCache: syncedCache{t: t, synced: tt.synced},
				hubReader: reader, clusterName: "c1", owner: reports.NewAddonOwner(reader, "c1"), writes: writes,
			}
			kube := fake.NewClientset()
			before := leaseCheckCounts(t)
			last := tt.wantChecks[len(tt.wantChecks)-1]

			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { defer close(stopped); h.leaseUpdater(kube, "addons").Start(ctx) }()
			// The run is over once its last check is counted and, when the checks passed,
			// the Lease is written; the updater then waits a period, and cancel ends it.
			deadline := time.Now().Add(10 * time.Second)
			for {
				done := leaseCheckCounts(t)[last] > before[last]
				if done && tt.wantLease {
					_, err := kube.CoordinationV1().Leases("addons").Get(context.Background(), apps.AddonName, metav1.GetOptions{})
					done = err == nil
				}
				if done || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-stopped

			expectCounted(t, before, tt.wantChecks...)
			if hubAsked.Load() != (len(tt.wantChecks) >= 2) {
				t.Errorf("hub asked: %v, want %v", hubAsked.Load(), len(tt.wantChecks) >= 2)
			}
			lease, err := kube.CoordinationV1().Leases("addons").Get(context.Background(), apps.AddonName, metav1.GetOptions{})
			switch {
			case !tt.wantLease && !apierrors.IsNotFound(err):
				t.Errorf("want no Lease, got %v (error %v)", lease, err)
			case tt.wantLease && err != nil:
				t.Errorf("want the Lease addons/%s, got %v", apps.AddonName, err)
			case tt.wantLease && (lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 60):
				t.Errorf("the Lease's spec %+v, want a renew time and addon-framework's duration of 60 s", lease.Spec)
			}
		})
	}
}

// checkResult is one series of argocd_pull_agent_lease_checks_total.
type checkResult struct{ check, result string }

// leaseCheckCounts reads argocd_pull_agent_lease_checks_total, by check and result.
func leaseCheckCounts(t *testing.T) map[checkResult]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[checkResult]float64{}
	for _, f := range families {
		if f.GetName() != "argocd_pull_agent_lease_checks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var key checkResult
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "check":
					key.check = l.GetValue()
				case "result":
					key.result = l.GetValue()
				}
			}
			counts[key] = m.GetCounter().GetValue()
		}
	}
	return counts
}

// expectCounted checks that since before the counter grew by one for each of want and
// by nothing for any other check or result.
func expectCounted(t *testing.T, before map[checkResult]float64, want ...checkResult) {
	t.Helper()
	after := leaseCheckCounts(t)
	for _, check := range []string{leaseCheckInformers, leaseCheckHub, leaseCheckReports} {
		for _, result := range []string{leaseCheckPassed, leaseCheckFailed} {
			key := checkResult{check, result}
			if _, ok := after[key]; !ok {
				t.Errorf("argocd_pull_agent_lease_checks_total has no series %+v", key)
			}
			wantGrowth := 0.0
			if slices.Contains(want, key) {
				wantGrowth = 1
			}
			if got := after[key] - before[key]; got != wantGrowth {
				t.Errorf("argocd_pull_agent_lease_checks_total{check=%q,result=%q} grew by %v, want %v", check, result, got, wantGrowth)
			}
		}
	}
}

// gaugeValue reads a gauge of controller-runtime's registry, where the agent's metrics live.
func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
