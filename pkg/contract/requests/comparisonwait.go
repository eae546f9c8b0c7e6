package requests

import (
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"k8s.io/apimachinery/pkg/types"
)

// A sync that succeeded is not yet compared: Argo CD's application controller writes the
// completed operation state first and asks for a refresh of the Application after it, so
// for a moment the cluster's Application, and then the hub's mirror of it, shows the sync
// Succeeded next to the sync status of the comparison before it, often OutOfSync. An
// ApplicationSet's RollingSync sets .operation on a Pending Application that shows
// OutOfSync; if the hub had already removed the delivered operation, that same sync would
// be asked for again and run a second time. So the hub keeps a delivered operation that
// completed with Succeeded while the Application still shows OutOfSync, until it shows
// the comparison after the sync (not OutOfSync) or, for an Application that stays
// OutOfSync after a successful sync, for ComparisonGrace: a request equal to the one held
// changes nothing meanwhile.

// ComparisonGrace is how long the hub keeps a sync that succeeded while its Application
// still shows OutOfSync: Argo CD compares right after a sync and the agent reports it soon
// after; the grace leaves room for a busy cluster.
const ComparisonGrace = 10 * time.Second

// awaitingComparison tells whether status shows a completed operation that may not have
// been compared yet: Succeeded, and OutOfSync.
func awaitingComparison(status *argov1alpha1.ApplicationStatus) bool {
	return status.OperationState != nil && status.OperationState.Phase == synccommon.OperationSucceeded &&
		status.Sync.Status == argov1alpha1.SyncStatusCodeOutOfSync
}

// comparisonWaits remembers, per hub Application, since when the hub has kept a delivered
// operation only to wait for its comparison.
type comparisonWaits struct {
	grace time.Duration
	mu    sync.Mutex
	byApp map[types.NamespacedName]comparisonWait
}

type comparisonWait struct {
	request string
	since   time.Time
}

func newComparisonWaits(grace time.Duration) *comparisonWaits {
	return &comparisonWaits{grace: grace, byApp: map[types.NamespacedName]comparisonWait{}}
}

// remaining returns how much longer the hub keeps the completed operation request of
// the Application key, whose status is status, at now: zero when it may go (it does not
// await a comparison, or the grace is over).
func (w *comparisonWaits) remaining(key types.NamespacedName, request string, status *argov1alpha1.ApplicationStatus, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !awaitingComparison(status) {
		delete(w.byApp, key)
		return 0
	}
	wait, ok := w.byApp[key]
	if !ok || wait.request != request {
		wait = comparisonWait{request: request, since: now}
		w.byApp[key] = wait
	}
	// A wait that is over stays until forgotten, so that a later look does not start it
	// again.
	return max(wait.since.Add(w.grace).Sub(now), 0)
}

// next returns when the Application key should be looked at again for its wait: zero when
// it has none, or none still running.
func (w *comparisonWaits) next(key types.NamespacedName, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	wait, ok := w.byApp[key]
	if !ok {
		return 0
	}
	return max(wait.since.Add(w.grace).Sub(now), 0)
}

// forget drops the wait of key: called whenever key's operation is not kept for it.
func (w *comparisonWaits) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byApp, key)
}
