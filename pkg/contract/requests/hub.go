package requests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// Hub is the hub's side of the protocol for every hub Application: what it remembers
// between reconciles, the requests it cleared (clearedRequests) and the delivered
// operations it keeps until their comparison (comparisonWaits). A reconcile asks it to
// Decide, writes the clear the Decision asks for (ClearPatch) and records it (Cleared),
// then builds the payload with what the Decision says it carries (Next).
type Hub struct {
	cleared     *clearedRequests
	comparisons *comparisonWaits
}

// NewHub returns a Hub that keeps a sync that succeeded and still shows OutOfSync for
// grace (ComparisonGrace) at most.
func NewHub(grace time.Duration) *Hub {
	return &Hub{cleared: newClearedRequests(), comparisons: newComparisonWaits(grace)}
}

// Decision is what the hub does with the requests of one hub Application in one
// reconcile.
type Decision struct {
	// Application is the hub Application as stored to decide and build on: the one from
	// the cache, or the one the last clear returned while the cache still shows a version
	// from before it; after Cleared, the one this clear returned.
	Application *unstructured.Unstructured
	// ClearOperation and ClearRefresh are the ids of the requests the spoke acknowledged
	// that the hub Application loses now, "" for none.
	ClearOperation, ClearRefresh string

	key       types.NamespacedName
	hub       hubRequests
	carried   Carried
	delivered pullmodel.Delivered
}

// Decide decides on the requests of the hub Application stored (from the cache) whose
// current ManifestWork is work (nil when none), at now: which acknowledged ones the hub
// Application loses, and which it keeps. A delivered operation stays on the hub until the
// hub Application shows it completed, and a sync that succeeded until it shows it
// compared (comparisonwait.go); the status change that shows it, or the requeue Requeue
// asks for, brings the Application back.
func (h *Hub) Decide(ctx context.Context, stored *unstructured.Unstructured, work *workv1.ManifestWork, now time.Time) (Decision, error) {
	d := Decision{key: types.NamespacedName{Namespace: stored.GetNamespace(), Name: stored.GetName()}, carried: CarriedBy(work)}
	values, _ := pullmodel.ApplicationFeedback(work)
	d.delivered = pullmodel.DeliveredFromFeedback(values)
	var cleared []string
	d.Application, cleared = h.cleared.overlay(d.key, stored, d.carried)
	var err error
	if d.hub, err = hubRequestsOf(d.Application); err != nil {
		return Decision{}, err
	}

	if c := d.carried.Operation; c != nil && d.delivered.Operation == c.ID && !slices.Contains(cleared, c.ID) && sameOperation(c, d.hub.operation) {
		status, err := decodeStatus(d.Application)
		if err != nil {
			return Decision{}, err
		}
		switch {
		case !operationCompleted(status.OperationState, c):
			// Delivered, not completed on the hub yet: the work keeps carrying it (the
			// agent runs an id once), and the status change that shows it completed brings
			// the Application back here.
			log.FromContext(ctx).V(4).Info("Operation delivered; clearing it once the hub Application shows it completed", "request", c.ID)
			d.delivered.Operation = ""
			h.comparisons.forget(d.key)
		case h.comparisons.remaining(d.key, c.ID, status, now) > 0:
			// Succeeded, not compared yet (comparisonwait.go): kept the same way; the
			// comparison's status change, or the requeue at the end of the grace, brings
			// the Application back here.
			log.FromContext(ctx).V(4).Info("Operation succeeded; clearing it once the hub Application shows it compared", "request", c.ID)
			d.delivered.Operation = ""
		default:
			// Compared, or the grace is over. The wait stays until the clear is seen (the
			// branch below): a clear that fails is retried without a new grace.
			d.ClearOperation = c.ID
		}
	} else {
		h.comparisons.forget(d.key)
	}
	if c := d.carried.Refresh; c != nil && d.delivered.Refresh == c.ID && !slices.Contains(cleared, c.ID) && sameRefresh(c, d.hub.refresh) {
		d.ClearRefresh = c.ID
	}
	return d, nil
}

// Clears tells whether the hub Application loses a request now. A request is carried
// only by an existing work: when it does, there is a work.
func (d Decision) Clears() bool { return d.ClearOperation != "" || d.ClearRefresh != "" }

// ClearPatch is the merge patch that removes the acknowledged requests from the hub
// Application in one write, locked to the version decided on, which still held them: a
// conflict means the Application changed since, and the next reconcile decides again on
// the new version.
func (d Decision) ClearPatch() ([]byte, error) {
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": d.Application.GetResourceVersion()}}
	if d.ClearOperation != "" {
		patch["operation"] = nil
	}
	if d.ClearRefresh != "" {
		patch["metadata"].(map[string]any)["annotations"] = map[string]any{apps.AnnotationRefresh: nil}
	}
	return json.Marshal(patch)
}

// Cleared records that ClearPatch was written and the API server returned after, which
// d then decides and builds on.
func (h *Hub) Cleared(d *Decision, after *unstructured.Unstructured) error {
	var ids []string
	for _, id := range []string{d.ClearOperation, d.ClearRefresh} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	h.cleared.record(d.key, d.Application.GetResourceVersion(), after, ids)
	hub, err := hubRequestsOf(after)
	if err != nil {
		return err
	}
	d.Application, d.hub = after, hub
	return nil
}

// Next is what the payload carries for d's hub Application (nextRequests), each new
// operation request with the start of the last operation the hub Application shows.
func (d Decision) Next() (Carried, error) {
	next := nextRequests(d.hub, d.carried, d.delivered, requestIDs(d.Application))
	if op := next.Operation; op != nil && (d.carried.Operation == nil || op.ID != d.carried.Operation.ID) {
		status, err := decodeStatus(d.Application)
		if err != nil {
			return Carried{}, err
		}
		op.After = lastOperationStart(status.OperationState)
	}
	return next, nil
}

// Requeue is when the hub Application key should be reconciled again even if nothing
// changes: at the end of the grace of a delivered operation waiting for its comparison;
// zero when none waits.
func (h *Hub) Requeue(key types.NamespacedName, now time.Time) time.Duration {
	return h.comparisons.next(key, now)
}

// Forget drops what the hub remembers of the deleted hub Application key.
func (h *Hub) Forget(key types.NamespacedName) {
	h.cleared.forget(key)
	h.comparisons.forget(key)
}

// decodeStatus decodes the status of the hub Application app as stored, as its typed view
// does.
func decodeStatus(app *unstructured.Unstructured) (*argov1alpha1.ApplicationStatus, error) {
	status := &argov1alpha1.ApplicationStatus{}
	stored, ok := app.Object["status"]
	if !ok || stored == nil {
		return status, nil
	}
	raw, err := json.Marshal(stored)
	if err == nil {
		err = json.Unmarshal(raw, status)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the status of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	return status, nil
}
