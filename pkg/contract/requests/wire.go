package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// OperationRequest is the value of apps.AnnotationOperationRequest: the hub Application's
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

// RefreshRequest is the value of apps.AnnotationRefreshRequest: the hub Application's
// apps.AnnotationRefresh value under the id of this request.
type RefreshRequest struct {
	// ID names the request, as OperationRequest.ID does.
	ID string `json:"id"`
	// Refresh is the hub annotation's value, "normal" or "hard".
	Refresh string `json:"refresh"`
}

// ParseOperationRequest reads an apps.AnnotationOperationRequest value. The operation must be
// a JSON object.
func ParseOperationRequest(value string) (OperationRequest, error) {
	var r OperationRequest
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return OperationRequest{}, fmt.Errorf("annotation %s is not a JSON request: %w", apps.AnnotationOperationRequest, err)
	}
	if r.ID == "" {
		return OperationRequest{}, fmt.Errorf("annotation %s has no id", apps.AnnotationOperationRequest)
	}
	if op := bytes.TrimSpace(r.Operation); len(op) == 0 || op[0] != '{' {
		return OperationRequest{}, fmt.Errorf("annotation %s: the operation is not a JSON object", apps.AnnotationOperationRequest)
	}
	return r, nil
}

// ParseRefreshRequest reads an apps.AnnotationRefreshRequest value.
func ParseRefreshRequest(value string) (RefreshRequest, error) {
	var r RefreshRequest
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return RefreshRequest{}, fmt.Errorf("annotation %s is not a JSON request: %w", apps.AnnotationRefreshRequest, err)
	}
	if r.ID == "" || r.Refresh == "" {
		return RefreshRequest{}, errors.New("annotation " + apps.AnnotationRefreshRequest + " needs an id and a refresh")
	}
	return r, nil
}

// Carried are the hub requests a payload carries, each nil when there is none.
type Carried struct {
	Operation *OperationRequest
	Refresh   *RefreshRequest
}

// Annotate puts c on annotations, a payload's, as the request annotations.
func (c Carried) Annotate(annotations map[string]string) error {
	if c.Operation != nil {
		v, err := json.Marshal(c.Operation)
		if err != nil {
			return err
		}
		annotations[apps.AnnotationOperationRequest] = string(v)
	}
	if c.Refresh != nil {
		v, err := json.Marshal(c.Refresh)
		if err != nil {
			return err
		}
		annotations[apps.AnnotationRefreshRequest] = string(v)
	}
	return nil
}

// CarriedBy reads the requests the payload of work carries. A request annotation that
// does not parse counts as none: the hub's request then gets a new id.
func CarriedBy(work *workv1.ManifestWork) Carried {
	var reqs Carried
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
		if r, err := ParseOperationRequest(v); err == nil {
			reqs.Operation = &r
		}
	}
	if v, ok := payload.Metadata.Annotations[apps.AnnotationRefreshRequest]; ok {
		if r, err := ParseRefreshRequest(v); err == nil {
			reqs.Refresh = &r
		}
	}
	return reqs
}
