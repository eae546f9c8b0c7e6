package aggregation

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// ownWrites remembers the controller's last update of each report. Under a stream of
// changes the next reconcile of an ApplicationSet often starts before the cache has seen
// that update: an update built on the cached copy would carry its outdated
// resourceVersion, cost the API server a full decode of the report (hundreds of KiB at
// a thousand clusters) and fail with a conflict. Building on the copy the controller wrote
// instead costs nothing and keeps the optimistic concurrency: a write by anyone else
// changes the cached resourceVersion, and then the cache wins.
type ownWrites struct {
	mu      sync.Mutex
	reports map[types.NamespacedName]ownWrite
}

// maxChain bounds how many of its own consecutive updates the controller remembers while
// the cache has seen none of them; a cache further behind is simply used (and may cost a
// conflict).
const maxChain = 32

type ownWrite struct {
	// chain holds the resourceVersions of the controller's consecutive updates, and the
	// one the first of them replaced; report is what the last one wrote, with the
	// resourceVersion the API server answered.
	chain  []string
	report *appsv1alpha1.MulticlusterApplicationSetReport
}

// current is the copy of the report to build on: the controller's own last write when
// cached shows an older version of the controller's own chain of updates (under load the
// cache can lag several writes), else cached.
func (w *ownWrites) current(key types.NamespacedName, cached *appsv1alpha1.MulticlusterApplicationSetReport) *appsv1alpha1.MulticlusterApplicationSetReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.reports[key]
	if !ok || cached == nil {
		return cached
	}
	if cached.ResourceVersion != last.report.ResourceVersion && slices.Contains(last.chain, cached.ResourceVersion) {
		return last.report.DeepCopy()
	}
	// The cache has caught up, or someone else wrote: nothing to remember any more.
	delete(w.reports, key)
	return cached
}

// updated records the controller's update of the report from resourceVersion base to
// written.
func (w *ownWrites) updated(key types.NamespacedName, base string, written *appsv1alpha1.MulticlusterApplicationSetReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reports == nil {
		w.reports = map[types.NamespacedName]ownWrite{}
	}
	chain := []string{base}
	if last, ok := w.reports[key]; ok && last.report.ResourceVersion == base && len(last.chain) < maxChain {
		chain = last.chain
	}
	w.reports[key] = ownWrite{chain: append(chain, written.ResourceVersion), report: written.DeepCopy()}
}

// forget drops what is remembered of the report: it was deleted, or the update failed.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.reports, key)
}
