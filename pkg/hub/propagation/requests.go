package propagation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Requests from the hub: a hub Application's .operation (a sync asked for by `argocd app
// sync` or the ApplicationSet controller's RollingSync) and its refresh annotation are
// delivered to the cluster once and run once.
//
// The payload never carries them: the work agent re-applies the payload with every change
// of the ManifestWork, and would start the same sync again; and dropping a field it applied
// would remove it from the spoke while Argo CD still runs the operation. Instead the
// payload carries each as a request annotation with an id (BuildPayload). The agent on the
// cluster sets the request on the spoke Application together with the id in a delivered
// annotation, once per id. The ManifestWork's status feedback brings that id back, and
// then this controller removes the request from the hub Application (so `argocd app sync`
// can be issued again, and a second identical refresh is a new request) and the payload
// stops carrying it.
//
// An id is minted when the hub holds a request the current ManifestWork does not carry
// unacknowledged: the same request while it is carried keeps its id, anything else (a
// different operation, or the same one asked for again after the last was delivered and
// cleared) is a new request.

// Event reasons on the hub Application.
const (
	ReasonOperationDelivered = "OperationDelivered"
	ReasonRefreshDelivered   = "RefreshDelivered"
)

// hubRequests is what a hub Application asks for: its .operation as canonical JSON
// (nil when none) and its refresh annotation ("" when none).
type hubRequests struct {
	operation []byte
	refresh   string
}

// hubRequestsOf reads the requests of a hub Application as stored.
func hubRequestsOf(app *unstructured.Unstructured) (hubRequests, error) {
	var h hubRequests
	if op, ok := app.Object["operation"]; ok && op != nil {
		raw, err := canonicalJSON(op)
		if err != nil {
			return hubRequests{}, fmt.Errorf("encoding the .operation of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
		}
		h.operation = raw
	}
	h.refresh = app.GetAnnotations()[apps.AnnotationRefresh]
	return h, nil
}

// canonicalJSON encodes v with object keys sorted and null members dropped.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonicalPayload(raw)
}

// sameOperation tells whether a carried request asks for the operation op (canonical).
func sameOperation(carried *apps.OperationRequest, op []byte) bool {
	if carried == nil || op == nil {
		return false
	}
	c, err := canonicalPayload(carried.Operation)
	return err == nil && bytes.Equal(c, op)
}

func sameRefresh(carried *apps.RefreshRequest, refresh string) bool {
	return carried != nil && refresh != "" && carried.Refresh == refresh
}

// carriedRequests reads the requests the payload of work carries. A request annotation
// that does not parse counts as none: the hub's request then gets a new id.
func carriedRequests(work *workv1.ManifestWork) Requests {
	var reqs Requests
	if work == nil || len(work.Spec.Workload.Manifests) != 1 {
		return reqs
	}
	var payload struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(work.Spec.Workload.Manifests[0].Raw, &payload); err != nil {
		return reqs
	}
	if v, ok := payload.Metadata.Annotations[apps.AnnotationOperationRequest]; ok {
		if r, err := apps.ParseOperationRequest(v); err == nil {
			reqs.Operation = &r
		}
	}
	if v, ok := payload.Metadata.Annotations[apps.AnnotationRefreshRequest]; ok {
		if r, err := apps.ParseRefreshRequest(v); err == nil {
			reqs.Refresh = &r
		}
	}
	return reqs
}

// nextRequests is what the payload carries for a hub Application that asks for hub, when
// its current work carries carried and the spoke acknowledged delivered: the carried
// request while the hub asks for the same and the spoke has not acknowledged it, a new
// request (id from mint) for anything else the hub asks for, nothing for what it does not.
func nextRequests(hub hubRequests, carried Requests, delivered pullmodel.Delivered, mint func(kind string, request []byte) string) Requests {
	var next Requests
	if hub.operation != nil {
		if sameOperation(carried.Operation, hub.operation) && delivered.Operation != carried.Operation.ID {
			next.Operation = carried.Operation
		} else {
			next.Operation = &apps.OperationRequest{ID: mint("operation", hub.operation), Operation: hub.operation}
		}
	}
	if hub.refresh != "" {
		if sameRefresh(carried.Refresh, hub.refresh) && delivered.Refresh != carried.Refresh.ID {
			next.Refresh = carried.Refresh
		} else {
			next.Refresh = &apps.RefreshRequest{ID: mint("refresh", []byte(hub.refresh)), Refresh: hub.refresh}
		}
	}
	return next
}

// requestIDs mints the ids of app's new requests: a hash of the Application's UID and
// resourceVersion when the request is first seen, and the request itself. A request seen
// again in the same version of the Application gets the same id (a reconcile that did not
// get to write the work tries again), a request asked for again later never does.
func requestIDs(app *unstructured.Unstructured) func(kind string, request []byte) string {
	return func(kind string, request []byte) string {
		h := sha256.New()
		for _, part := range [][]byte{[]byte(app.GetUID()), []byte(app.GetResourceVersion()), []byte(kind), request} {
			h.Write(part)
			h.Write([]byte{0})
		}
		return hex.EncodeToString(h.Sum(nil))[:20]
	}
}

// settleRequests clears from the hub Application the requests the spoke acknowledged,
// then sets in.requests to what the payload carries. After a clear, in holds the
// Application the API server returned, so the rest of the reconcile builds from it.
func (r *reconciler) settleRequests(ctx context.Context, in *storedApplication, works []workv1.ManifestWork) error {
	key := client.ObjectKeyFromObject(in.stored)
	work := pullmodel.CurrentWork(in.typed, works)
	carried := carriedRequests(work)
	values, _ := pullmodel.ApplicationFeedback(work)
	delivered := pullmodel.DeliveredFromFeedback(values)

	stored, cleared := r.cleared.overlay(key, in.stored, carried)
	if stored != in.stored {
		if err := in.set(stored); err != nil {
			return err
		}
	}
	hub, err := hubRequestsOf(in.stored)
	if err != nil {
		return err
	}

	var clearOperation, clearRefresh *string
	if c := carried.Operation; c != nil && delivered.Operation == c.ID && !slices.Contains(cleared, c.ID) && sameOperation(c, hub.operation) {
		switch {
		case !operationCompleted(in.typed.Status.OperationState, c):
			// Delivered, not completed on the hub yet: the work keeps carrying it (the
			// agent runs an id once), and the status change that shows it completed brings
			// the Application back here.
			ctrl.LoggerFrom(ctx).V(4).Info("Operation delivered; clearing it once the hub Application shows it completed", "request", c.ID)
			delivered.Operation = ""
			r.comparisons.forget(key)
		case r.comparisons.remaining(key, c.ID, &in.typed.Status, r.now().Time) > 0:
			// Succeeded, not compared yet (comparisonwait.go): kept the same way; the
			// comparison's status change, or Reconcile's requeue at the end of the grace,
			// brings the Application back here.
			ctrl.LoggerFrom(ctx).V(4).Info("Operation succeeded; clearing it once the hub Application shows it compared", "request", c.ID)
			delivered.Operation = ""
		default:
			// Compared, or the grace is over. The wait stays until the clear is seen (the
			// branch below): a clear that fails is retried without a new grace.
			clearOperation = &c.ID
		}
	} else {
		r.comparisons.forget(key)
	}
	if c := carried.Refresh; c != nil && delivered.Refresh == c.ID && !slices.Contains(cleared, c.ID) && sameRefresh(c, hub.refresh) {
		clearRefresh = &c.ID
	}
	if clearOperation != nil || clearRefresh != nil {
		// A request is carried only by an existing work: work is not nil here.
		if err := r.clearRequests(ctx, in, clearOperation, clearRefresh, work.Namespace); err != nil {
			return err
		}
		if hub, err = hubRequestsOf(in.stored); err != nil {
			return err
		}
		for _, id := range []*string{clearOperation, clearRefresh} {
			if id != nil {
				cleared = append(cleared, *id)
			}
		}
	}
	in.requests = nextRequests(hub, carried, delivered, requestIDs(in.stored))
	if next := in.requests.Operation; next != nil && (carried.Operation == nil || next.ID != carried.Operation.ID) {
		next.After = lastOperationStart(in.typed.Status.OperationState)
	}
	return nil
}

// operationCompleted tells whether the hub Application's mirrored operation state shows
// the operation req asked for done: completed, and started later than the last operation
// the hub showed when the request was made (both starts are the cluster's clock). The
// hub keeps .operation until then, as Argo CD keeps it on an Application until its
// operation completes: the ApplicationSet controller sets .operation on a Pending
// Application that is OutOfSync, and one Running while still OutOfSync goes back to
// Waiting and Pending; with the request gone from the hub it would ask for the same sync
// again, which would be a new request.
func operationCompleted(op *argov1alpha1.OperationState, req *apps.OperationRequest) bool {
	if op == nil || !op.Phase.Completed() {
		return false
	}
	if req.After == "" {
		return true
	}
	after, err := time.Parse(time.RFC3339, req.After)
	if err != nil {
		return true
	}
	return op.StartedAt.Time.Truncate(time.Second).After(after)
}

// lastOperationStart is the start of op in RFC 3339, empty when there is none.
func lastOperationStart(op *argov1alpha1.OperationState) string {
	if op == nil || op.StartedAt.IsZero() {
		return ""
	}
	return op.StartedAt.UTC().Format(time.RFC3339)
}

// clearRequests removes the acknowledged requests from the hub Application in one merge
// patch locked to the version read, which still held them: a conflict means the
// Application changed since, and the next reconcile decides again on the new version.
func (r *reconciler) clearRequests(ctx context.Context, in *storedApplication, operation, refresh *string, cluster string) error {
	before := in.stored
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": before.GetResourceVersion()}}
	if operation != nil {
		patch["operation"] = nil
	}
	if refresh != nil {
		patch["metadata"].(map[string]any)["annotations"] = map[string]any{apps.AnnotationRefresh: nil}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	after := before.DeepCopy()
	if err := r.client.Patch(ctx, after, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("clearing the delivered requests of Application %s/%s: %w", before.GetNamespace(), before.GetName(), err)
	}
	var ids []string
	for _, id := range []*string{operation, refresh} {
		if id != nil {
			ids = append(ids, *id)
		}
	}
	r.cleared.record(client.ObjectKeyFromObject(before), before.GetResourceVersion(), after, ids)
	if err := in.set(after); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if operation != nil {
		log.V(2).Info("Cleared the operation the cluster acknowledged", "request", *operation)
		r.recorder.Eventf(in.typed, corev1.EventTypeNormal, ReasonOperationDelivered,
			"Operation request %s was delivered to cluster %s and removed from the hub Application", *operation, cluster)
	}
	if refresh != nil {
		log.V(2).Info("Cleared the refresh the cluster acknowledged", "request", *refresh)
		r.recorder.Eventf(in.typed, corev1.EventTypeNormal, ReasonRefreshDelivered,
			"Refresh request %s was delivered to cluster %s and removed from the hub Application", *refresh, cluster)
	}
	return nil
}

// clearedRequests remembers the requests this controller cleared from each hub
// Application until the cache and the ManifestWork have caught up with the clear. Two
// reads would otherwise go wrong: a cache still showing the Application from before the
// clear, next to a ManifestWork that no longer carries the request, would make the
// request look new and run it again; and a request asked for again, equal to one cleared,
// next to a ManifestWork that still carries the acknowledged one, would look like the old
// one and be cleared without running.
type clearedRequests struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]clearRecord
}

// clearRecord is what the clears of one Application left: the resourceVersions they were
// written over, the Application the last one returned, and the ids of the requests they
// removed. Each clear is locked to the version it was written over, so no other version
// lies between those and the last one returned.
type clearRecord struct {
	befores []string
	after   *unstructured.Unstructured
	ids     []string
}

func newClearedRequests() *clearedRequests {
	return &clearedRequests{byApp: map[types.NamespacedName]clearRecord{}}
}

func (c *clearedRequests) record(key types.NamespacedName, before string, after *unstructured.Unstructured, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	befores := []string{before}
	if old, ok := c.byApp[key]; ok && old.after.GetUID() == after.GetUID() {
		befores = append(slices.Clone(old.befores), before)
		ids = append(slices.Clone(old.ids), ids...)
	}
	c.byApp[key] = clearRecord{befores: befores, after: after.DeepCopy(), ids: ids}
}

// overlay returns the Application to decide on, given stored from the cache and the
// requests the current work carries: the one the last clear returned while the cache
// still shows a version a clear was written over, stored otherwise. It also returns the ids cleared
// that the work still carries. A record nothing needs any more is forgotten.
func (c *clearedRequests) overlay(key types.NamespacedName, stored *unstructured.Unstructured, carried Requests) (*unstructured.Unstructured, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.byApp[key]
	if !ok {
		return stored, nil
	}
	if rec.after.GetUID() != stored.GetUID() {
		delete(c.byApp, key)
		return stored, nil
	}
	if slices.Contains(rec.befores, stored.GetResourceVersion()) {
		return rec.after.DeepCopy(), rec.ids
	}
	var stillCarried []string
	for _, id := range rec.ids {
		if (carried.Operation != nil && carried.Operation.ID == id) || (carried.Refresh != nil && carried.Refresh.ID == id) {
			stillCarried = append(stillCarried, id)
		}
	}
	if len(stillCarried) == 0 {
		delete(c.byApp, key)
	}
	return stored, stillCarried
}

// forget drops what is remembered of a deleted Application.
func (c *clearedRequests) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byApp, key)
}
