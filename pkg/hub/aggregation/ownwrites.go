package aggregation

import (
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

type ownWrite struct {
	// base is the resourceVersion the update replaced; report is what it wrote, with the
	// resourceVersion the API server answered.
	base   string
	report *appsv1alpha1.MulticlusterApplicationSetReport
}

// current is the copy of the report to build on: the controller's own last write when
// cached still shows the version that write replaced, else cached.
func (w *ownWrites) current(key types.NamespacedName, cached *appsv1alpha1.MulticlusterApplicationSetReport) *appsv1alpha1.MulticlusterApplicationSetReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.reports[key]
	if !ok || cached == nil {
		return cached
	}
	if cached.ResourceVersion == last.base {
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
	w.reports[key] = ownWrite{base: base, report: written.DeepCopy()}
}

// forget drops what is remembered of the report: it was deleted, or the update failed.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.reports, key)
}
