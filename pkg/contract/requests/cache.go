package requests

// CachedStatus is the part of the status of app, a hub Application as stored, that the
// hub's side of the protocol reads (Hub.Decide, Decision.Next), for a cache that keeps no
// more: the operation state's phase and start, and the sync status while the hub holds an
// .operation (Decide reads it only then; kept only then, it does not bring the hub back for
// every other sync change). Empty when app shows none of them.
func CachedStatus(app map[string]any) map[string]any {
	kept := map[string]any{}
	status, ok := app["status"].(map[string]any)
	if !ok {
		return kept
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
	if op, held := app["operation"]; held && op != nil {
		if sync, ok := status["sync"].(map[string]any); ok {
			if v, ok := sync["status"]; ok {
				kept["sync"] = map[string]any{"status": v}
			}
		}
	}
	return kept
}
