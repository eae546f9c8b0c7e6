package aggregation

import (
	"context"
	"fmt"
	"time"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/ownwrites"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reportWrite is what a reconcile did with the MulticlusterApplicationSetReport: result
// (a reportWrites label, resultNone when there is none and should be none) and, when
// paced, how long the write must still wait.
type reportWrite struct {
	result string
	wait   time.Duration
}

// reportWriter writes the MulticlusterApplicationSetReports: it creates them, updates
// them on the version they were built on and deletes them with their ApplicationSet. It
// remembers its own last update of each report while the cache has not seen it, and
// spaces its writes by their size.
type reportWriter struct {
	// client reads from the manager's cache and writes to the API server.
	client client.Client
	// written is the writer's own last update of each report, newer than the cache for a
	// moment after each write: building on it spares the API server an update with an
	// outdated resourceVersion (a full decode of the report, then a conflict).
	written ownwrites.Tracker[*appsv1alpha1.MulticlusterApplicationSetReport]
	// pacing spaces the report writes by their size.
	pacing writePacing
	// clock is the time; nil is the wall clock.
	clock func() time.Time
}

func (w *reportWriter) now() time.Time {
	if w.clock == nil {
		return time.Now()
	}
	return w.clock()
}

// current is the report of the ApplicationSet key to build on: the cache's, or the
// writer's own last write while the cache lags it; nil when there is none.
func (w *reportWriter) current(ctx context.Context, key types.NamespacedName) (*appsv1alpha1.MulticlusterApplicationSetReport, error) {
	cached := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := w.client.Get(ctx, key, cached); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting MulticlusterApplicationSetReport %s: %w", key, err)
		}
		w.written.Forget(key)
		return nil, nil
	}
	return w.written.Current(cached), nil
}

// wait is how long the next write must still wait (writePacing); 0 when it may be made.
func (w *reportWriter) wait() time.Duration {
	return w.pacing.wait(w.now())
}

// write makes the stored report desired: creates it when current is nil, else updates
// current when desired changes it (mergeInto), else leaves it (resultSkipped).
func (w *reportWriter) write(ctx context.Context, current, desired *appsv1alpha1.MulticlusterApplicationSetReport) (reportWrite, error) {
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(desired)
	if current == nil {
		// The client decodes the API server's answer into what it sends: a copy, so the
		// answer never lands in the memo's entries.
		desired = desired.DeepCopy()
		if err := w.client.Create(ctx, desired); err != nil {
			return reportWrite{}, fmt.Errorf("creating MulticlusterApplicationSetReport %s: %w", key, err)
		}
		w.pacing.wrote(w.now(), jsonSize(desired.Statuses))
		log.V(2).Info("Created MulticlusterApplicationSetReport", "clusters", desired.Statuses.Summary.Clusters)
		return reportWrite{result: resultCreated}, nil
	}
	updated := current.DeepCopy()
	if !mergeInto(updated, desired) {
		log.V(4).Info("MulticlusterApplicationSetReport is up to date")
		return reportWrite{result: resultSkipped}, nil
	}
	// The update carries the resourceVersion it was built on (the cache's, or the
	// writer's own last write while the cache lags it): on a conflict the reconcile fails
	// and runs again on the newer object, never overwriting it blindly.
	if err := w.client.Update(ctx, updated); err != nil {
		w.written.Forget(key)
		return reportWrite{}, fmt.Errorf("updating MulticlusterApplicationSetReport %s: %w", key, err)
	}
	w.written.Wrote(current.ResourceVersion, updated)
	w.pacing.wrote(w.now(), jsonSize(updated.Statuses))
	s := updated.Statuses.Summary
	log.V(2).Info("Updated MulticlusterApplicationSetReport", "clusters", s.Clusters, "healthy", s.Healthy,
		"synced", s.Synced, "inProgress", s.InProgress)
	return reportWrite{result: resultUpdated}, nil
}

// delete deletes the report of an ApplicationSet that is gone (resultDeleted; resultNone
// when there is none). The UID precondition keeps a report recreated meanwhile.
func (w *reportWriter) delete(ctx context.Context, report *appsv1alpha1.MulticlusterApplicationSetReport) (reportWrite, error) {
	if report == nil || !report.DeletionTimestamp.IsZero() {
		return reportWrite{}, nil
	}
	err := w.client.Delete(ctx, report, client.Preconditions{UID: &report.UID})
	if apierrors.IsNotFound(err) {
		return reportWrite{result: resultDeleted}, nil
	}
	if err != nil {
		return reportWrite{}, fmt.Errorf("deleting MulticlusterApplicationSetReport %s: %w", klog.KObj(report), err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleted the MulticlusterApplicationSetReport of a deleted ApplicationSet")
	return reportWrite{result: resultDeleted}, nil
}
