//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// faultKind names an injected fault in the log and the figures.
type faultKind string

const (
	faultAgentKill   faultKind = "SIGKILL an agent"
	faultManagerKill faultKind = "SIGKILL the manager leader"
	faultAPIOutage   faultKind = "hub API server outage"
	faultAddon       faultKind = "addon disabled and re-enabled"
	faultLinkCut     faultKind = "agent's hub link cut"
)

// faultNames are the names --faults takes.
var faultNames = map[string]faultKind{
	"agent": faultAgentKill, "manager": faultManagerKill, "apiserver": faultAPIOutage, "addon": faultAddon, "link": faultLinkCut,
}

// faultKindsNamed parses --faults: names separated by commas, in the order given (the
// run shuffles them with its seed).
func faultKindsNamed(list string) ([]faultKind, error) {
	var kinds []faultKind
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		k, ok := faultNames[name]
		if !ok {
			return nil, fmt.Errorf("--faults: no fault kind %q (agent, manager, apiserver, addon, link)", name)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// The fleet's leases (FleetOptions in chaos_test.go): the registration agents mark an addon
// unavailable 5 lease durations after its last renewal, looking every sync interval;
// controller-runtime's leader election Lease lasts 15 s (its default).
const (
	addonLeaseDurationSeconds = 20
	addonLeaseSyncInterval    = 5 * time.Second
	addonLeaseWindow          = 5 * addonLeaseDurationSeconds * time.Second
	leaderLeaseDuration       = 15 * time.Second
	// managerLeaderElectionID is the manager's leader election Lease, in argocd.
	managerLeaderElectionID = "argocd-pull-addon-manager"
)

// faultRunner runs one fault at a time in the background, while operations go on; a
// hub API server outage runs in line (nothing reaches the hub while it is down).
type faultRunner struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
}

// wait blocks until the running fault, if any, has ended, and returns its error.
func (f *faultRunner) wait(ctx context.Context) error {
	f.mu.Lock()
	done := f.done
	f.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err
	f.done, f.err = nil, nil
	return err
}

// start runs fn in the background once the previous fault has ended.
func (f *faultRunner) start(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	done := make(chan struct{})
	f.mu.Lock()
	f.done = done
	f.mu.Unlock()
	go func() {
		err := fn(ctx)
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		close(done)
	}()
	return nil
}

// faultOp builds the fault operation of kind, drawing its target and durations from the
// seeded source now, so the operation sequence does not depend on timing.
func (h *harness) faultOp(kind faultKind) op {
	cluster := pick(h, h.m.clusters)
	// Seconds, drawn now.
	between := func(lo, hi int) time.Duration { return time.Duration(lo+h.rng.IntN(hi-lo+1)) * time.Second }
	switch kind {
	case faultAgentKill:
		down := between(1, 5)
		return op{opKind(kind), fmt.Sprintf("%s, restarted after %s", cluster, down), func(ctx context.Context) error {
			return h.faults.start(ctx, func(ctx context.Context) error { return h.killAgent(ctx, cluster, down) })
		}}
	case faultManagerKill:
		down := between(2, 8)
		return op{opKind(kind), fmt.Sprintf("restarted after %s", down), func(ctx context.Context) error {
			return h.faults.start(ctx, func(ctx context.Context) error { return h.killLeader(ctx, down) })
		}}
	case faultAPIOutage:
		down := between(10, 30)
		return op{opKind(kind), fmt.Sprintf("for %s", down), func(ctx context.Context) error {
			if err := h.faults.wait(ctx); err != nil {
				return err
			}
			return h.apiOutage(ctx, down)
		}}
	case faultAddon:
		down := between(3, 10)
		return op{opKind(kind), fmt.Sprintf("%s, re-enabled after %s", cluster, down), func(ctx context.Context) error {
			return h.faults.start(ctx, func(ctx context.Context) error { return h.toggleAddon(ctx, cluster, down) })
		}}
	case faultLinkCut:
		return op{opKind(kind), cluster + ", until the hub marks it unavailable", func(ctx context.Context) error {
			return h.faults.start(ctx, func(ctx context.Context) error { return h.cutLink(ctx, cluster) })
		}}
	}
	panic("unknown fault " + kind)
}

func (h *harness) killAgent(ctx context.Context, cluster string, down time.Duration) error {
	if err := h.pf.Pull.KillAgent(cluster); err != nil {
		return err
	}
	h.figs.count(&h.figs.agentKills)
	if err := sleep(ctx, down); err != nil {
		return err
	}
	return h.pf.Pull.StartAgent(ctx, cluster, "")
}

// killLeader SIGKILLs the replica holding the leader election Lease, measures how long the
// other takes to hold it, and starts the killed one again after down.
func (h *harness) killLeader(ctx context.Context, down time.Duration) error {
	pull := h.pf.Pull
	leader := -1
	if err := waitFor(ctx, time.Minute, "a manager leader", func(context.Context) (bool, error) {
		var err error
		leader, err = pull.Leader()
		return err == nil && leader >= 0, nil
	}); err != nil {
		return err
	}
	if err := pull.KillManager(leader); err != nil {
		return err
	}
	killed := time.Now()
	h.figs.count(&h.figs.managerKills)
	// The killed leader's last renewal of the leader election Lease.
	before := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: argoNS, Name: managerLeaderElectionID}
	if err := h.hub.Get(ctx, leaseKey, before); err != nil {
		return fmt.Errorf("reading the leader election Lease: %w", err)
	}
	if err := waitFor(ctx, 2*time.Minute, "another manager replica to lead", func(context.Context) (bool, error) {
		l, err := pull.Leader()
		return err == nil && l >= 0 && l != leader, nil
	}); err != nil {
		h.figs.violation(fmt.Sprintf("no manager replica took over within 2 minutes of killing the leader (replica %d)", leader))
		return nil
	}
	h.figs.addDuration(&h.figs.takeovers, time.Since(killed))
	after := &coordinationv1.Lease{}
	if err := h.hub.Get(ctx, leaseKey, after); err == nil && after.Spec.AcquireTime != nil && before.Spec.RenewTime != nil &&
		before.Spec.LeaseDurationSeconds != nil && ptr.Deref(after.Spec.HolderIdentity, "") != ptr.Deref(before.Spec.HolderIdentity, "") {
		expired := before.Spec.RenewTime.Add(time.Duration(*before.Spec.LeaseDurationSeconds) * time.Second)
		h.figs.addDuration(&h.figs.acquiredAfterExpiry, after.Spec.AcquireTime.Sub(expired))
	}
	if err := sleep(ctx, time.Until(killed.Add(down))); err != nil {
		return err
	}
	return pull.StartManager(ctx, leader)
}

func (h *harness) apiOutage(ctx context.Context, down time.Duration) error {
	hub := h.pf.Hub.ControlPlane
	if err := hub.StopAPIServer(); err != nil {
		return err
	}
	stopped := time.Now()
	if err := sleep(ctx, down); err != nil {
		return err
	}
	if err := hub.StartAPIServer(ctx); err != nil {
		return err
	}
	h.figs.count(&h.figs.outages)
	h.figs.addDuration(&h.figs.outageDurations, time.Since(stopped))
	return nil
}

// toggleAddon does `clusteradm addon disable` then `enable` on cluster, stopping and
// starting the agent where its Deployment goes and comes.
func (h *harness) toggleAddon(ctx context.Context, cluster string, down time.Duration) error {
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: fleet.PullAddonName}}
	if err := h.hub.Delete(ctx, mca); err != nil {
		return fmt.Errorf("disabling the addon on %s: %w", cluster, err)
	}
	spoke := h.spokes[cluster]
	if err := waitFor(ctx, 3*time.Minute, "the addon and its agent Deployment gone from "+cluster, func(ctx context.Context) (bool, error) {
		err := h.hub.Get(ctx, client.ObjectKeyFromObject(mca), &addonv1alpha1.ManagedClusterAddOn{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		err = spoke.Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAgentName}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return err
	}
	// Its Deployment is gone: a kubelet would stop the agent's pod now.
	if err := h.pf.Pull.StopAgent(cluster); err != nil {
		return err
	}
	h.figs.count(&h.figs.addonToggles)
	if err := sleep(ctx, down); err != nil {
		return err
	}
	if err := h.pf.Pull.EnableAddon(ctx, cluster, ""); err != nil {
		return err
	}
	return h.pf.Pull.StartAgent(ctx, cluster, "")
}

// cutLink cuts cluster's agent off the hub until the hub marks its addon unavailable,
// then restores the link and measures how long the cluster's reports take to be fresh.
func (h *harness) cutLink(ctx context.Context, cluster string) error {
	pull := h.pf.Pull
	if err := pull.SetAgentHubLink(cluster, false); err != nil {
		return err
	}
	cut := time.Now()
	h.figs.count(&h.figs.linkCuts)
	// The lease is renewed at most a sync interval before the cut; the registration agent
	// looks every sync interval; twice the window is the bound of "never flagged".
	bound := 2 * addonLeaseWindow
	flagged := waitFor(ctx, bound, cluster+"'s addon unavailable on the hub", func(ctx context.Context) (bool, error) {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		if err := h.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: fleet.PullAddonName}, mca); err != nil {
			return false, nil
		}
		return !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable), nil
	})
	if flagged != nil {
		h.figs.violation(fmt.Sprintf("%s's agent cut off the hub was not marked unavailable within %s", cluster, bound))
	} else {
		h.figs.addDuration(&h.figs.flaggedAfter, time.Since(cut))
		// The window runs from the agent's last renewal of its Lease on the cluster.
		lease := &coordinationv1.Lease{}
		if err := h.spokes[cluster].Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAddonName}, lease); err == nil && lease.Spec.RenewTime != nil {
			h.figs.addDuration(&h.figs.flaggedAfterRenewal, time.Since(lease.Spec.RenewTime.Time))
		}
	}
	if err := pull.SetAgentHubLink(cluster, true); err != nil {
		return err
	}
	restored := time.Now()
	// Whether the cluster changed while cut off: otherwise the freshness is trivial.
	if behind, err := h.staleReports(ctx, cluster, false); err == nil && len(behind) > 0 {
		h.figs.count(&h.figs.cutsBehind)
	}
	if err := waitFor(ctx, 3*time.Minute, cluster+"'s reports fresh after the link returned", func(ctx context.Context) (bool, error) {
		stale, err := h.staleReports(ctx, cluster, false)
		return err == nil && len(stale) == 0, nil
	}); err != nil {
		stale, _ := h.staleReports(ctx, cluster, false)
		h.figs.violation(fmt.Sprintf("%s's reports not fresh 3 minutes after its link returned: %v", cluster, stale))
		return nil
	}
	h.figs.addDuration(&h.figs.freshAfterLink, time.Since(restored))
	if err := waitFor(ctx, 3*time.Minute, cluster+"'s addon available after the link returned", func(ctx context.Context) (bool, error) {
		stale, err := h.staleReports(ctx, cluster, true)
		return err == nil && len(stale) == 0, nil
	}); err != nil {
		h.figs.violation(fmt.Sprintf("%s's addon not available 3 minutes after its link returned", cluster))
		return nil
	}
	h.figs.addDuration(&h.figs.availableAfterLink, time.Since(restored))
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
