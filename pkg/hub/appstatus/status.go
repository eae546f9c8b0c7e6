package appstatus

import (
	"slices"
	"time"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The hub Application's status is a pure function of the merged scalars and the agent's
// report; the two functions below compute it in place and say whether it changed, so the
// controller writes only on change.

// mirrorScalars writes s into status and reports whether anything changed. Only the fields
// s carries are touched; every other field of status (resources, conditions, history, the
// operation's message and result, ...) is preserved, so a later writer of those fields and
// this one do not undo each other.
//
// Two fields follow from the mirrored ones, as Argo CD's application controller sets them:
//   - health.lastTransitionTime becomes now when the health status changes;
//   - an operation state is only created once the feedback carries a phase, because the
//     Application CRD requires operation, phase and startedAt together. When the first phase
//     arrives without a start time, now stands in for it until the spoke's time arrives.
//
// A repeated identical feedback changes nothing, so now never causes a write by itself.
func mirrorScalars(status *argov1alpha1.ApplicationStatus, fb pullmodel.Scalars, now metav1.Time) bool {
	changed := false
	if fb.Health != nil && status.Health.Status != *fb.Health {
		status.Health.Status = *fb.Health
		t := now
		status.Health.LastTransitionTime = &t
		changed = true
	}
	if fb.Sync != nil && status.Sync.Status != *fb.Sync {
		status.Sync.Status = *fb.Sync
		changed = true
	}
	if fb.Revision != nil && status.Sync.Revision != *fb.Revision {
		status.Sync.Revision = *fb.Revision
		changed = true
	}
	if mergeOperationState(status, fb, now) {
		changed = true
	}
	return changed
}

func mergeOperationState(status *argov1alpha1.ApplicationStatus, fb pullmodel.Scalars, now metav1.Time) bool {
	if fb.OperationPhase == nil && fb.OperationStartedAt == nil {
		return false
	}
	op := status.OperationState
	if op == nil {
		if fb.OperationPhase == nil {
			// A start time without a phase cannot make a valid operation state.
			return false
		}
		op = &argov1alpha1.OperationState{Phase: *fb.OperationPhase, StartedAt: now}
		if fb.OperationStartedAt != nil {
			op.StartedAt = *fb.OperationStartedAt
		}
		status.OperationState = op
		return true
	}
	changed := false
	if fb.OperationPhase != nil && op.Phase != *fb.OperationPhase {
		op.Phase = *fb.OperationPhase
		changed = true
	}
	// Compare as the API stores it: RFC 3339, whole seconds.
	if fb.OperationStartedAt != nil && !op.StartedAt.Time.Truncate(time.Second).Equal(fb.OperationStartedAt.Time.Truncate(time.Second)) {
		op.StartedAt = *fb.OperationStartedAt
		changed = true
	}
	return changed
}

// mirrorReportDetails makes status show what only the agent's report carries, and
// reports whether anything changed: a multi-source Application's sync revisions, the
// resources with their sync and health, the spoke's
// conditions (pullmodel.SetSpokeConditions: the hub's stay), the health message (only
// while the shown health is the reported one, it explains that status) and the
// operation's message and finish time (only for the operation the report describes).
// Without a report there are none of these: what a report that is gone said, or what it
// said about another health or operation, is not left beside newer feedback that may
// contradict it. Call it after the scalars were merged.
func mirrorReportDetails(status *argov1alpha1.ApplicationStatus, rep *appsv1alpha1.ApplicationReportStatus) bool {
	var (
		resources     []argov1alpha1.ResourceStatus
		spoke         []argov1alpha1.ApplicationCondition
		healthMessage string
		revisions     []string
	)
	if rep != nil {
		// A multi-source Application's revisions, one per source: the ManifestWork's
		// feedback carries scalars only.
		revisions = rep.Sync.Revisions
		resources = report.ToArgoResources(rep.Resources)
		spoke = report.ToArgoConditions(rep.Conditions)
		if string(status.Health.Status) == string(rep.Health.Status) {
			healthMessage = rep.Health.Message
		}
	}
	changed := false
	if !slices.Equal(status.Sync.Revisions, revisions) {
		status.Sync.Revisions = slices.Clone(revisions)
		changed = true
	}
	if !equality.Semantic.DeepEqual(status.Resources, resources) {
		status.Resources = resources
		changed = true
	}
	if conditions, ok := pullmodel.SetSpokeConditions(status.Conditions, spoke); ok {
		status.Conditions = conditions
		changed = true
	}
	if status.Health.Message != healthMessage {
		status.Health.Message = healthMessage
		changed = true
	}
	if mirrorOperationDetails(status.OperationState, rep) {
		changed = true
	}
	return changed
}

// mirrorOperationDetails makes op carry the report's message and finish time when the
// report describes op, and neither otherwise; it reports whether that changed op.
func mirrorOperationDetails(op *argov1alpha1.OperationState, rep *appsv1alpha1.ApplicationReportStatus) bool {
	if op == nil {
		return false
	}
	var (
		message  string
		finished *metav1.Time
	)
	if rep != nil && rep.OperationState != nil && sameOperation(op, rep.OperationState) {
		message, finished = rep.OperationState.Message, rep.OperationState.FinishedAt
	}
	changed := false
	if op.Message != message {
		op.Message = message
		changed = true
	}
	switch {
	case finished == nil && op.FinishedAt != nil:
		op.FinishedAt = nil
		changed = true
	case finished != nil && (op.FinishedAt == nil || !sameSecond(op.FinishedAt.Time, finished.Time)):
		t := *finished
		op.FinishedAt = &t
		changed = true
	}
	return changed
}

// sameOperation tells whether the hub's operation state and the report's describe the
// same operation: same phase and, when the report has one, same start time.
func sameOperation(op *argov1alpha1.OperationState, rop *appsv1alpha1.OperationStateReport) bool {
	if string(op.Phase) != string(rop.Phase) {
		return false
	}
	return rop.StartedAt == nil || sameSecond(op.StartedAt.Time, rop.StartedAt.Time)
}

// sameSecond compares times as the API stores them: RFC 3339, whole seconds.
func sameSecond(a, b time.Time) bool {
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}
