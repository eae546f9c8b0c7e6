package requests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/canonicaljson"
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
		raw, err := canonicaljson.Marshal(op)
		if err != nil {
			return hubRequests{}, fmt.Errorf("encoding the .operation of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
		}
		h.operation = raw
	}
	h.refresh = app.GetAnnotations()[apps.AnnotationRefresh]
	return h, nil
}

// sameOperation tells whether a carried request asks for the operation op (canonical).
func sameOperation(carried *OperationRequest, op []byte) bool {
	if carried == nil || op == nil {
		return false
	}
	c, err := canonicaljson.Reencode(carried.Operation)
	return err == nil && bytes.Equal(c, op)
}

func sameRefresh(carried *RefreshRequest, refresh string) bool {
	return carried != nil && refresh != "" && carried.Refresh == refresh
}

// nextRequests is what the payload carries for a hub Application that asks for hub, when
// its current work carries carried and the spoke acknowledged delivered: the carried
// request while the hub asks for the same and the spoke has not acknowledged it, a new
// request (id from mint) for anything else the hub asks for, nothing for what it does not.
func nextRequests(hub hubRequests, carried Carried, delivered pullmodel.Delivered, mint func(kind string, request []byte) string) Carried {
	var next Carried
	if hub.operation != nil {
		if sameOperation(carried.Operation, hub.operation) && delivered.Operation != carried.Operation.ID {
			next.Operation = carried.Operation
		} else {
			next.Operation = &OperationRequest{ID: mint("operation", hub.operation), Operation: hub.operation}
		}
	}
	if hub.refresh != "" {
		if sameRefresh(carried.Refresh, hub.refresh) && delivered.Refresh != carried.Refresh.ID {
			next.Refresh = carried.Refresh
		} else {
			next.Refresh = &RefreshRequest{ID: mint("refresh", []byte(hub.refresh)), Refresh: hub.refresh}
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

// operationCompleted tells whether the hub Application's mirrored operation state shows
// the operation req asked for done: completed, and started later than the last operation
// the hub showed when the request was made (both starts are the cluster's clock). The
// hub keeps .operation until then, as Argo CD keeps it on an Application until its
// operation completes: the ApplicationSet controller sets .operation on a Pending
// Application that is OutOfSync, and one Running while still OutOfSync goes back to
// Waiting and Pending; with the request gone from the hub it would ask for the same sync
// again, which would be a new request.
func operationCompleted(op *argov1alpha1.OperationState, req *OperationRequest) bool {
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
