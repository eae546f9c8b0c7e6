package appstatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Names of the ManifestWork status feedback values (DESIGN §4). The propagation controller
// declares one JSONPath feedback rule per name on the Application manifest.
const (
	FeedbackHealthStatus            = "healthStatus"            // .status.health.status
	FeedbackSyncStatus              = "syncStatus"              // .status.sync.status
	FeedbackOperationStatePhase     = "operationStatePhase"     // .status.operationState.phase
	FeedbackOperationStateStartedAt = "operationStateStartedAt" // .status.operationState.startedAt
	FeedbackSyncRevision            = "syncRevision"            // .status.sync.revision
)

// Where the Application manifest of a ManifestWork is, in its status.
const (
	applicationGroup    = "argoproj.io"
	applicationResource = "applications"
	applicationKind     = "Application"
)

// Feedback is the part of an Argo CD ApplicationStatus that a ManifestWork's status feedback
// determines. A nil field means the feedback did not carry that value (the JSONPath found
// nothing on the spoke, or the value was malformed): the hub keeps what it has.
type Feedback struct {
	Health             *health.HealthStatusCode
	Sync               *argov1alpha1.SyncStatusCode
	Revision           *string
	OperationPhase     *synccommon.OperationPhase
	OperationStartedAt *metav1.Time
}

// IsEmpty tells whether the feedback carries no value at all.
func (f Feedback) IsEmpty() bool {
	return f == Feedback{}
}

// ApplicationFeedback returns the status feedback values the work agent reported for the
// Argo CD Application manifest of mw, and whether mw reports that manifest at all. Feedback
// of any other manifest does not count.
func ApplicationFeedback(mw *workv1.ManifestWork) ([]workv1.FeedbackValue, bool) {
	if mw == nil {
		return nil, false
	}
	for i := range mw.Status.ResourceStatus.Manifests {
		m := &mw.Status.ResourceStatus.Manifests[i]
		if isApplicationManifest(m.ResourceMeta) {
			return m.StatusFeedbacks.Values, true
		}
	}
	return nil, false
}

func isApplicationManifest(meta workv1.ManifestResourceMeta) bool {
	if meta.Group != applicationGroup {
		return false
	}
	return meta.Resource == applicationResource || (meta.Resource == "" && meta.Kind == applicationKind)
}

// FeedbackFromValues reads feedback values into the status fields they determine. Unknown
// names are skipped. A value of an unexpected type or a start time that is not RFC 3339 is
// left out and reported in the returned error (the caller logs it); the other values still
// count.
func FeedbackFromValues(values []workv1.FeedbackValue) (Feedback, error) {
	var (
		fb   Feedback
		errs []error
	)
	for _, v := range values {
		switch v.Name {
		case FeedbackHealthStatus, FeedbackSyncStatus, FeedbackSyncRevision,
			FeedbackOperationStatePhase, FeedbackOperationStateStartedAt:
		default:
			continue
		}
		s, err := stringValue(v.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("feedback value %q: %w", v.Name, err))
			continue
		}
		switch v.Name {
		case FeedbackHealthStatus:
			h := health.HealthStatusCode(s)
			fb.Health = &h
		case FeedbackSyncStatus:
			c := argov1alpha1.SyncStatusCode(s)
			fb.Sync = &c
		case FeedbackSyncRevision:
			fb.Revision = &s
		case FeedbackOperationStatePhase:
			p := synccommon.OperationPhase(s)
			fb.OperationPhase = &p
		case FeedbackOperationStateStartedAt:
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				errs = append(errs, fmt.Errorf("feedback value %q is not an RFC 3339 time: %w", v.Name, err))
				continue
			}
			mt := metav1.NewTime(t)
			fb.OperationStartedAt = &mt
		}
	}
	return fb, errors.Join(errs...)
}

// stringValue reads a feedback value that must be a string. The work agent reports JSONPath
// results that are strings as type String; a JSON string in JsonRaw is accepted too.
func stringValue(v workv1.FieldValue) (string, error) {
	switch v.Type {
	case workv1.String:
		if v.String == nil {
			return "", errors.New("type String without a string")
		}
		return *v.String, nil
	case workv1.JsonRaw:
		if v.JsonRaw == nil {
			return "", errors.New("type JsonRaw without a value")
		}
		var s string
		if err := json.Unmarshal([]byte(*v.JsonRaw), &s); err != nil {
			return "", fmt.Errorf("JsonRaw value is not a JSON string: %w", err)
		}
		return s, nil
	default:
		return "", fmt.Errorf("type %q, want String", v.Type)
	}
}

// MergeFeedback writes fb into status and reports whether anything changed. Only the fields
// fb carries are touched; every other field of status (resources, conditions, history, the
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
func MergeFeedback(status *argov1alpha1.ApplicationStatus, fb Feedback, now metav1.Time) bool {
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

func mergeOperationState(status *argov1alpha1.ApplicationStatus, fb Feedback, now metav1.Time) bool {
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
