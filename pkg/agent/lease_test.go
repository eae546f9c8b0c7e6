package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestLeaseUpdater(t *testing.T) {
	before := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := before.Add(time.Minute)
	existing := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "addons", Name: "argocd-pull"},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &metav1.MicroTime{Time: before}},
	}
	pass := func() bool { return true }
	fail := func() bool { return false }
	tests := map[string]struct {
		lease *coordinationv1.Lease
		// synced and hub are the two checks, in the order the agent runs them.
		synced, hub func() bool
		// updateErr makes the API server refuse the Lease's update.
		updateErr   error
		wantOutcome string
		// wantRenewTime is the Lease's renew time afterwards, zero for no Lease.
		wantRenewTime time.Time
		// wantHubChecked: whether the hub check ran.
		wantHubChecked bool
	}{
		"no Lease yet, healthy: created": {
			synced: pass, hub: pass, wantOutcome: leaseRenewed, wantRenewTime: now, wantHubChecked: true},
		"a Lease, healthy: renewed": {
			lease: existing, synced: pass, hub: pass, wantOutcome: leaseRenewed, wantRenewTime: now, wantHubChecked: true},
		"the hub does not answer: not renewed": {
			lease: existing, synced: pass, hub: fail, wantOutcome: leaseHubUnreachable, wantRenewTime: before, wantHubChecked: true},
		"the hub does not answer, no Lease yet: none created": {
			synced: pass, hub: fail, wantOutcome: leaseHubUnreachable, wantHubChecked: true},
		"the informers have not synced: not renewed, the hub not asked": {
			lease: existing, synced: fail, hub: pass, wantOutcome: leaseCachesNotSynced, wantRenewTime: before},
		"the update is refused": {
			lease: existing, synced: pass, hub: pass, updateErr: apierrors.NewForbidden(coordinationv1.Resource("leases"), "argocd-pull", errors.New("no RBAC")),
			wantOutcome: leaseWriteFailed, wantRenewTime: before, wantHubChecked: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.lease != nil {
				objs = append(objs, tt.lease.DeepCopy())
			}
			kube := fake.NewClientset(objs...)
			if tt.updateErr != nil {
				kube.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.updateErr
				})
			}
			hubChecked := false
			u := newLeaseUpdater(kube.CoordinationV1(), "argocd-pull", "addons", 0,
				leaseCheck{outcome: leaseCachesNotSynced, ok: tt.synced},
				leaseCheck{outcome: leaseHubUnreachable, ok: func() bool { hubChecked = true; return tt.hub() }})
			u.now = func() time.Time { return now }
			countedBefore := leaseUpdateCount(t, tt.wantOutcome)

			if got := u.renew(context.Background()); got != tt.wantOutcome {
				t.Errorf("renew() = %q, want %q", got, tt.wantOutcome)
			}
			if got := leaseUpdateCount(t, tt.wantOutcome) - countedBefore; got != 1 {
				t.Errorf("argocd_pull_agent_lease_updates_total{outcome=%q} grew by %v, want 1", tt.wantOutcome, got)
			}
			if hubChecked != tt.wantHubChecked {
				t.Errorf("hub checked: %v, want %v", hubChecked, tt.wantHubChecked)
			}
			lease, err := kube.CoordinationV1().Leases("addons").Get(context.Background(), "argocd-pull", metav1.GetOptions{})
			if tt.wantRenewTime.IsZero() {
				if !apierrors.IsNotFound(err) {
					t.Errorf("want no Lease, got %v (error %v)", lease, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("reading the Lease: %v", err)
			}
			if got := lease.Spec.RenewTime; got == nil || !got.Time.Equal(tt.wantRenewTime) {
				t.Errorf("renew time %v, want %v", got, tt.wantRenewTime)
			}
			if got := lease.Spec.LeaseDurationSeconds; got == nil || *got != leaseDurationSeconds {
				t.Errorf("lease duration %v, want %d s", got, leaseDurationSeconds)
			}
		})
	}
}

// TestLeasePeriod: production keeps addon-framework's period; only a test shortens it.
func TestLeasePeriod(t *testing.T) {
	if got := newLeaseUpdater(nil, "l", "ns", 0).period; got != time.Minute {
		t.Errorf("default period %v, want 1m", got)
	}
	if got := newLeaseUpdater(nil, "l", "ns", time.Second).period; got != time.Second {
		t.Errorf("period %v, want the option's 1s", got)
	}
}

// leaseUpdateCount reads argocd_pull_agent_lease_updates_total for one outcome.
func leaseUpdateCount(t *testing.T, outcome string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "argocd_pull_agent_lease_updates_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
