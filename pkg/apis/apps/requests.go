package apps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// OperationRequest is the value of AnnotationOperationRequest: the hub Application's
// .operation under the id of this request.
type OperationRequest struct {
	// ID names the request. It stays the same while the hub holds the same operation, and
	// a new request gets a new one: the agent sets .operation once per ID.
	ID string `json:"id"`
	// Operation is the hub Application's .operation as stored, with every field the
	// user or the ApplicationSet controller wrote, known to this module's types or not.
	Operation json.RawMessage `json:"operation"`
	// After is the start (RFC 3339) of the last operation the hub Application showed when
	// the request was made, empty when it showed none: the hub keeps its .operation until
	// its status shows an operation running or started after that, so that the
	// ApplicationSet controller sees the sync start before the request goes (the agent
	// ignores it).
	After string `json:"after,omitempty"`
}

// RefreshRequest is the value of AnnotationRefreshRequest: the hub Application's
// AnnotationRefresh value under the id of this request.
type RefreshRequest struct {
	// ID names the request, as OperationRequest.ID does.
	ID string `json:"id"`
	// Refresh is the hub annotation's value, "normal" or "hard".
	Refresh string `json:"refresh"`
}

// ParseOperationRequest reads an AnnotationOperationRequest value. The operation must be
// a JSON object.
func ParseOperationRequest(value string) (OperationRequest, error) {
	var r OperationRequest
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return OperationRequest{}, fmt.Errorf("annotation %s is not a JSON request: %w", AnnotationOperationRequest, err)
	}
	if r.ID == "" {
		return OperationRequest{}, fmt.Errorf("annotation %s has no id", AnnotationOperationRequest)
	}
	if op := bytes.TrimSpace(r.Operation); len(op) == 0 || op[0] != '{' {
		return OperationRequest{}, fmt.Errorf("annotation %s: the operation is not a JSON object", AnnotationOperationRequest)
	}
	return r, nil
}

// ParseRefreshRequest reads an AnnotationRefreshRequest value.
func ParseRefreshRequest(value string) (RefreshRequest, error) {
	var r RefreshRequest
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return RefreshRequest{}, fmt.Errorf("annotation %s is not a JSON request: %w", AnnotationRefreshRequest, err)
	}
	if r.ID == "" || r.Refresh == "" {
		return RefreshRequest{}, errors.New("annotation " + AnnotationRefreshRequest + " needs an id and a refresh")
	}
	return r, nil
}
