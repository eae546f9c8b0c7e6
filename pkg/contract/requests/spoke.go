package requests

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// The spoke's side: the agent sets each request the payload carries on the spoke
// Application once, in one merge patch locked to the version it read, the field and the
// delivered annotation with the request's id. A request whose id the delivered annotation
// already holds is done, however often the work agent applies it again.

// Deliveries says what SpokePatch did with an Application's requests: the ids it sets,
// the id of an operation request waiting for the operation in progress, and why it
// ignored a request it could not read.
type Deliveries struct {
	Operation, Refresh, Waiting string
	Skipped                     []string
}

// SpokePatch is the merge patch that sets the undelivered requests of app, a spoke
// Application, nil when there is nothing to set. It carries app's resourceVersion:
// applied to any other version it fails.
//
//   - An operation request whose id is not the delivered one is set as .operation, unless
//     an operation is in progress (.operation set): it waits, as Argo CD's own API refuses a
//     sync while one runs, for Argo CD to clear it.
//   - A refresh request whose id is not the delivered one sets the refresh annotation; a
//     pending "hard" one is not weakened to "normal".
func SpokePatch(app *argov1alpha1.Application) (map[string]any, Deliveries) {
	var d Deliveries
	ann := app.GetAnnotations()
	annotations := map[string]any{}
	patch := map[string]any{}

	if v, ok := ann[apps.AnnotationOperationRequest]; ok {
		switch req, err := ParseOperationRequest(v); {
		case err != nil:
			d.Skipped = append(d.Skipped, err.Error())
		case req.ID == ann[apps.AnnotationOperationDelivered]:
		case app.Operation != nil:
			d.Waiting = req.ID
		default:
			patch["operation"] = req.Operation
			annotations[apps.AnnotationOperationDelivered] = req.ID
			d.Operation = req.ID
		}
	}
	if v, ok := ann[apps.AnnotationRefreshRequest]; ok {
		switch req, err := ParseRefreshRequest(v); {
		case err != nil:
			d.Skipped = append(d.Skipped, err.Error())
		case req.ID == ann[apps.AnnotationRefreshDelivered]:
		default:
			if ann[apps.AnnotationRefresh] != string(argov1alpha1.RefreshTypeHard) {
				annotations[apps.AnnotationRefresh] = req.Refresh
			}
			annotations[apps.AnnotationRefreshDelivered] = req.ID
			d.Refresh = req.ID
		}
	}
	if len(annotations) == 0 {
		return nil, d
	}
	patch["metadata"] = map[string]any{"resourceVersion": app.GetResourceVersion(), "annotations": annotations}
	return patch, d
}
