package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TrimStoredApplication is a cache transform: of a hub Application the manager caches as
// stored (unstructured, for this controller alone: the payload is built from it) it keeps
// what the propagation controller reads, metadata, spec and .operation, and of the status
// only the conditions, the operation state's phase and start, and the sync status while the
// hub holds an .operation (settleRequests reads it then; kept only then, it does not bring
// the controller back for every other sync change). The rest of the status (resources,
// sync and health with their comparison, summary, history, the sync result with every
// resource) is what the application status controller mirrors from the cluster; the
// typed cache it reads holds it, and a second copy here cost the manager about as much
// memory as all the other hub objects together (docs/benchmarks.md).
// Objects of other kinds, and typed Applications, pass unchanged.
func TrimStoredApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != applicationGVK {
		return obj, nil
	}
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return obj, nil
	}
	kept := map[string]any{}
	if conditions, ok := status["conditions"]; ok {
		kept["conditions"] = conditions
	}
	if op, ok := status["operationState"].(map[string]any); ok {
		state := map[string]any{}
		for _, k := range []string{"phase", "startedAt"} {
			if v, ok := op[k]; ok {
				state[k] = v
			}
		}
		kept["operationState"] = state
	}
	if op, held := u.Object["operation"]; held && op != nil {
		if sync, ok := status["sync"].(map[string]any); ok {
			if v, ok := sync["status"]; ok {
				kept["sync"] = map[string]any{"status": v}
			}
		}
	}
	if len(kept) == 0 {
		delete(u.Object, "status")
	} else {
		u.Object["status"] = kept
	}
	return u, nil
}
