// Package aggregation rolls the state of an ApplicationSet's pulled Applications on every
// cluster into one MulticlusterApplicationSetReport, with the ApplicationSet's name and
// namespace. It is built from three sources: the ManifestWorks' status feedback (sync and
// health scalars, polled by the OCM work agent), the argocd-pull agents'
// ApplicationStatusReports (conditions, resources, messages) and the argocd-pull
// ManagedClusterAddOns (whether each cluster's agent is available).
//
// The report also covers the ApplicationSet's hub-rendered Applications (docs/cmp.md):
// ordinary hub Applications, owned by the ApplicationSet, whose Argo CD applies a
// ManifestWork rendered by the ocm-manifestwork plugin into the cluster's namespace. Their
// entries take sync and health from the hub Application (the hub's Argo CD computes them)
// and resources and failures from the ManifestWork's status (OCM's work agent writes it).
// An Application finds its ManifestWorks in its own status.resources; a ManifestWork finds
// its Application through a field index on those, and the ApplicationSet through the
// Application's owner reference.
//
// The controller is keyed by the ApplicationSet's namespace/name, even after the
// ApplicationSet is gone. Every source maps to that key through a field index or the
// object's own fields, so a change to one agent report recomputes only its ApplicationSet;
// the workqueue coalesces bursts into one reconcile, and the report is written only when
// the result differs from what is stored. There is no periodic rebuild.
package aggregation

import (
	"context"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "aggregation"

// maxConcurrentReconciles: four workers. A rebuild takes the entries of the clusters that
// did not change from the memo (entryMemo), so most of a reconcile is its report write, a
// round trip to a busy API server, and one worker serving many ApplicationSets in turn
// left each waiting for the others' writes. Four workers without the memo only multiplied
// the controller's CPU, each rebuild computing every entry; with it, they made the reports
// fresher (docs/benchmarks.md, "What the figures decided"). Report writes
// are paced by their size (writePacing), or four workers rewrite the large reports of a
// fleet being created four times as often and slow propagation down.
const maxConcurrentReconciles = 4

// reconciler keeps one MulticlusterApplicationSetReport per ApplicationSet with pulled
// or hub-rendered Applications: it reads the ApplicationSet and its report, reads the
// report's inputs, builds the report from them and hands it to the writer. Its metrics
// wrap it (instrumented).
type reconciler struct {
	// client reads from the manager's cache.
	client client.Client
	// hubRenderedWorks reads the hub-rendered ManifestWorks: the controller's own cache,
	// see newHubRenderedCache.
	hubRenderedWorks client.Reader
	// agents are the clusters' agent availabilities as the watch last saw them.
	agents agentAvailabilities
	// limits bound the report's size.
	limits Limits
	// entries are the pulled entries of each ApplicationSet's last build, for the next.
	entries entryMemos
	// reports writes the reports.
	reports reportWriter
}

// newReconciler is the controller's reconciler on c, reading the hub-rendered
// ManifestWorks through hubRenderedWorks.
func newReconciler(c client.Client, hubRenderedWorks client.Reader) *reconciler {
	return &reconciler{client: c, hubRenderedWorks: hubRenderedWorks, limits: DefaultLimits, reports: reportWriter{client: c}}
}

// Setup registers the controller with mgr, with its own cache of hub-rendered
// ManifestWorks.
func Setup(mgr ctrl.Manager) error {
	hubRendered, err := newHubRenderedCache(mgr)
	if err != nil {
		return err
	}
	return newReconciler(mgr.GetClient(), hubRendered).setupWithManager(mgr, hubRendered, &latency.Arrivals{})
}

// reconcile brings the report of the ApplicationSet key in line with its sources and
// says what it did with the report.
func (r *reconciler) reconcile(ctx context.Context, key types.NamespacedName) (reportWrite, error) {
	log := ctrl.LoggerFrom(ctx)
	appSet, err := r.applicationSet(ctx, key)
	if err != nil {
		return reportWrite{}, err
	}
	current, err := r.reports.current(ctx, key)
	if err != nil {
		return reportWrite{}, err
	}
	if appSet == nil || !appSet.DeletionTimestamp.IsZero() {
		r.entries.forget(key)
		return r.reports.delete(ctx, current)
	}
	if wait := r.reports.wait(); wait > 0 {
		log.V(4).Info("Reports were written moments ago; the next write waits", "wait", wait)
		return reportWrite{result: resultPaced, wait: wait}, nil
	}
	in, err := r.inputs(ctx, key)
	if err != nil {
		return reportWrite{}, err
	}
	if len(in.Works) == 0 && len(in.HubRendered) == 0 && len(in.Undelivered) == 0 && current == nil {
		log.V(4).Info("ApplicationSet has no pulled or hub-rendered Applications; no report")
		r.entries.forget(key)
		return reportWrite{}, nil
	}
	statuses := r.entries.build(key, in, r.limits)
	return r.reports.write(ctx, current, desiredReport(appSet, statuses))
}

// applicationSet reads the metadata of the ApplicationSet key; nil when it is gone.
func (r *reconciler) applicationSet(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	appSet := &metav1.PartialObjectMetadata{}
	appSet.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("ApplicationSet"))
	if err := r.client.Get(ctx, key, appSet); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting ApplicationSet %s: %w", key, err)
		}
		return nil, nil
	}
	return appSet, nil
}
