package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"open-cluster-management.io/addon-framework/pkg/lease"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
)

// Deadlines of the health checks: addon-framework's lease updater calls them in line,
// once a minute (60 s, with up to 25 % jitter).
const (
	cacheSyncCheckTimeout = time.Second
	hubCheckTimeout       = 10 * time.Second
)

// healthChecks gate the addon Lease: it is renewed only while the agent's informers are
// synced, the hub answers the agent's own credentials and takes its report writes, so the
// ManagedClusterAddOn's Available condition means "reports flow", not merely "the pod runs".
type healthChecks struct {
	managed  cache.Cache
	hubCache cache.Cache
	// hubReader reads the hub uncached, with the agent's credentials.
	hubReader   client.Reader
	clusterName string
	// owner learns the ManagedClusterAddOn the hub check reads.
	owner *reports.AddonOwner
	// writes follows the report writes, which the report controller records.
	writes *reportWriteHealth
	// hubDown and writesFailing remember the last hub and reports checks, so only changes
	// are logged.
	hubDown       atomic.Bool
	writesFailing atomic.Bool
}

func newHealthChecks(managed, hubCache cache.Cache, hubReader client.Reader, clusterName string, owner *reports.AddonOwner, reportFailureGrace time.Duration) *healthChecks {
	return &healthChecks{managed: managed, hubCache: hubCache, hubReader: hubReader, clusterName: clusterName, owner: owner,
		writes: newReportWriteHealth(reportFailureGrace, time.Now)}
}

// leaseUpdater is addon-framework's lease updater for the addon Lease in namespace, gated
// by the checks in this order (the framework stops at the first that fails): the hub
// check after the informers, so it is not spent while the informers cannot serve reports
// anyway; the reports check last, so that when the hub is unreachable, which fails the
// writes too, the metric names the hub.
func (h *healthChecks) leaseUpdater(kube kubernetes.Interface, namespace string) lease.LeaseUpdater {
	return lease.NewLeaseUpdater(kube, apps.AddonName, namespace, h.cachesSynced, h.hubWorks, h.reportsWritten)
}

// cachesSynced is true when every informer of both caches has synced.
func (h *healthChecks) cachesSynced() bool {
	ctx, cancel := context.WithTimeout(context.Background(), cacheSyncCheckTimeout)
	defer cancel()
	synced := h.managed.WaitForCacheSync(ctx) && h.hubCache.WaitForCacheSync(ctx)
	countLeaseCheck(leaseCheckInformers, synced)
	if !synced {
		ctrl.Log.WithName("agent").WithName("lease").V(2).Info("Not renewing the addon lease: informers are not synced")
	}
	return synced
}

// hubWorks reads the agent's own ManagedClusterAddOn, the cheapest request its hub Role
// allows, with its hub credentials. NotFound still proves the hub answers and trusts them.
func (h *healthChecks) hubWorks() bool {
	ctx, cancel := context.WithTimeout(context.Background(), hubCheckTimeout)
	defer cancel()
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := h.hubReader.Get(ctx, types.NamespacedName{Namespace: h.clusterName, Name: apps.AddonName}, mca)
	h.owner.Observe(mca, err)
	works := err == nil || apierrors.IsNotFound(err)
	countLeaseCheck(leaseCheckHub, works)
	log := ctrl.Log.WithName("agent").WithName("lease")
	if works {
		hubReachable.Set(1)
		if h.hubDown.Swap(false) {
			log.V(2).Info("The hub answers again: renewing the addon lease")
		}
	} else {
		hubReachable.Set(0)
		if !h.hubDown.Swap(true) {
			log.V(2).Info("Not renewing the addon lease: the hub does not answer", "error", err.Error())
		}
	}
	return works
}

// reportsWritten is false when the hub has refused every report write for longer than the
// grace (reportWriteHealth says when), whatever the reason: RBAC, an admission policy or
// a quota refusing them, an invalid report. The hub then stops trusting the reports it
// holds, which no longer follow the cluster.
func (h *healthChecks) reportsWritten() bool {
	failingSince, lastErr := h.writes.failing()
	healthy := failingSince.IsZero()
	countLeaseCheck(leaseCheckReports, healthy)
	log := ctrl.Log.WithName("agent").WithName("lease")
	if healthy {
		if h.writesFailing.Swap(false) {
			log.V(2).Info("The hub takes report writes again: renewing the addon lease")
		}
	} else if !h.writesFailing.Swap(true) {
		log.V(2).Info("Not renewing the addon lease: the hub has refused every report write",
			"since", failingSince, "lastError", fmt.Sprint(lastErr))
	}
	return healthy
}

// reportWriteHealth follows the report controller's writes to the hub (applies and
// deletes). Writes are failing once one failed after the last that succeeded, for as
// long as a write that failed has not been retried successfully. They count against the
// lease only after the grace. An idle agent, with nothing to write, is healthy; so is
// one whose failing Application went away (its reconcile then ends without a write).
type reportWriteHealth struct {
	grace time.Duration
	now   func() time.Time

	mu sync.Mutex
	// streakStart is the first failure after the last success; zero when none.
	streakStart time.Time
	// pending are the reports whose last write failed and that are still being retried.
	pending map[string]bool
	lastErr error
}

func newReportWriteHealth(grace time.Duration, now func() time.Time) *reportWriteHealth {
	return &reportWriteHealth{grace: grace, now: now, pending: map[string]bool{}}
}

// Succeeded records a write of the report name the hub took.
func (w *reportWriteHealth) Succeeded(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, name)
	w.streakStart, w.lastErr = time.Time{}, nil
}

// Failed records a write of the report name that failed; the report controller retries it.
func (w *reportWriteHealth) Failed(name string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[name] = true
	w.lastErr = err
	if w.streakStart.IsZero() {
		w.streakStart = w.now()
	}
}

// Settled records that a reconcile of the report name ended without a failed write: it
// wrote, or had nothing (left) to write. No retry follows, so its failure is over.
func (w *reportWriteHealth) Settled(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, name)
	if len(w.pending) == 0 {
		w.streakStart, w.lastErr = time.Time{}, nil
	}
}

// failing returns when the writes started failing and the last error, once they have
// failed for longer than the grace; a zero time otherwise.
func (w *reportWriteHealth) failing() (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.streakStart.IsZero() || w.now().Sub(w.streakStart) <= w.grace {
		return time.Time{}, nil
	}
	return w.streakStart, w.lastErr
}
