package appstatus

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

var (
	started = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	later   = metav1.NewTime(time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC))
	now     = metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
)

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
}

func TestFeedbackFromValues(t *testing.T) {
	tests := map[string]struct {
		values  []workv1.FeedbackValue
		want    Feedback
		wantErr bool
	}{
		"no values": {},
		"all five": {
			values: []workv1.FeedbackValue{
				str(FeedbackHealthStatus, "Healthy"),
				str(FeedbackSyncStatus, "Synced"),
				str(FeedbackSyncRevision, "8f3c2b1"),
				str(FeedbackOperationStatePhase, "Succeeded"),
				str(FeedbackOperationStateStartedAt, "2026-11-01T10:00:00Z"),
			},
			want: Feedback{
				Health:             ptr.To(health.HealthStatusHealthy),
				Sync:               ptr.To(argov1alpha1.SyncStatusCodeSynced),
				Revision:           ptr.To("8f3c2b1"),
				OperationPhase:     ptr.To(synccommon.OperationSucceeded),
				OperationStartedAt: &started,
			},
		},
		"a subset": {
			values: []workv1.FeedbackValue{str(FeedbackHealthStatus, "Progressing")},
			want:   Feedback{Health: ptr.To(health.HealthStatusProgressing)},
		},
		"unknown names are skipped": {
			values: []workv1.FeedbackValue{str("replicas", "3"), str(FeedbackSyncStatus, "OutOfSync")},
			want:   Feedback{Sync: ptr.To(argov1alpha1.SyncStatusCodeOutOfSync)},
		},
		"start time with an offset": {
			values: []workv1.FeedbackValue{str(FeedbackOperationStateStartedAt, "2026-11-01T11:00:00+01:00")},
			want:   Feedback{OperationStartedAt: &started},
		},
		"malformed start time is left out, the rest counts": {
			values: []workv1.FeedbackValue{
				str(FeedbackOperationStateStartedAt, "yesterday"),
				str(FeedbackOperationStatePhase, "Running"),
			},
			want:    Feedback{OperationPhase: ptr.To(synccommon.OperationRunning)},
			wantErr: true,
		},
		"wrong type is left out": {
			values: []workv1.FeedbackValue{
				{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
				str(FeedbackSyncStatus, "Synced"),
			},
			want:    Feedback{Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced)},
			wantErr: true,
		},
		"type String without a string does not panic": {
			values:  []workv1.FeedbackValue{{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.String}}},
			wantErr: true,
		},
		"type JsonRaw without a value does not panic": {
			values:  []workv1.FeedbackValue{{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.JsonRaw}}},
			wantErr: true,
		},
		"JSON string in JsonRaw": {
			values: []workv1.FeedbackValue{{Name: FeedbackSyncRevision, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`"abc"`)}}},
			want:   Feedback{Revision: ptr.To("abc")},
		},
		"JSON object in JsonRaw is left out": {
			values:  []workv1.FeedbackValue{{Name: FeedbackSyncRevision, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`{"a":1}`)}}},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := FeedbackFromValues(tc.values)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("feedback (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplicationFeedback(t *testing.T) {
	values := []workv1.FeedbackValue{str(FeedbackHealthStatus, "Healthy")}
	other := []workv1.FeedbackValue{str(FeedbackHealthStatus, "Degraded")}
	manifest := func(group, kind, resource string, v []workv1.FeedbackValue) workv1.ManifestCondition {
		return workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: group, Kind: kind, Resource: resource, Name: "app"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: v},
		}
	}
	tests := map[string]struct {
		manifests []workv1.ManifestCondition
		want      []workv1.FeedbackValue
		wantFound bool
	}{
		"no status yet": {},
		"application manifest": {
			manifests: []workv1.ManifestCondition{manifest("argoproj.io", "Application", "applications", values)},
			want:      values, wantFound: true,
		},
		"kind only (resource not resolved)": {
			manifests: []workv1.ManifestCondition{manifest("argoproj.io", "Application", "", values)},
			want:      values, wantFound: true,
		},
		"other manifests do not count": {
			manifests: []workv1.ManifestCondition{
				manifest("", "ConfigMap", "configmaps", other),
				manifest("argoproj.io", "AppProject", "appprojects", other),
				manifest("argoproj.io", "Application", "applications", values),
			},
			want: values, wantFound: true,
		},
		"only other manifests": {
			manifests: []workv1.ManifestCondition{manifest("apps", "Deployment", "deployments", other)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mw := &workv1.ManifestWork{}
			mw.Status.ResourceStatus.Manifests = tc.manifests
			got, found := ApplicationFeedback(mw)
			if found != tc.wantFound {
				t.Fatalf("found = %v, want %v", found, tc.wantFound)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
	if _, found := ApplicationFeedback(nil); found {
		t.Error("nil ManifestWork: found feedback")
	}
}

// status is a fixture builder for hub Application statuses.
type status struct {
	s argov1alpha1.ApplicationStatus
}

func newStatus() *status { return &status{} }

func (b *status) health(h health.HealthStatusCode, at *metav1.Time) *status {
	b.s.Health.Status = h
	b.s.Health.LastTransitionTime = at
	return b
}

func (b *status) sync(s argov1alpha1.SyncStatusCode, revision string) *status {
	b.s.Sync.Status = s
	b.s.Sync.Revision = revision
	return b
}

func (b *status) operation(phase synccommon.OperationPhase, startedAt metav1.Time) *status {
	b.s.OperationState = &argov1alpha1.OperationState{Phase: phase, StartedAt: startedAt}
	return b
}

// others sets fields another writer owns, which merging must preserve.
func (b *status) others() *status {
	b.s.Resources = []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "guestbook-ui", Namespace: "guestbook", Version: "v1", Group: "apps"}}
	b.s.Conditions = []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionSyncError, Message: "boom"}}
	b.s.Health.Message = "1 pod not ready"
	b.s.Sync.Revisions = []string{"a", "b"}
	b.s.SourceType = argov1alpha1.ApplicationSourceTypeHelm
	if b.s.OperationState != nil {
		b.s.OperationState.Message = "successfully synced"
		b.s.OperationState.FinishedAt = &later
	}
	return b
}

func (b *status) obj() argov1alpha1.ApplicationStatus { return *b.s.DeepCopy() }

func TestMergeFeedback(t *testing.T) {
	full := Feedback{
		Health:             ptr.To(health.HealthStatusHealthy),
		Sync:               ptr.To(argov1alpha1.SyncStatusCodeSynced),
		Revision:           ptr.To("8f3c2b1"),
		OperationPhase:     ptr.To(synccommon.OperationSucceeded),
		OperationStartedAt: &started,
	}
	tests := map[string]struct {
		status      argov1alpha1.ApplicationStatus
		feedback    Feedback
		want        argov1alpha1.ApplicationStatus
		wantChanged bool
	}{
		"empty feedback changes nothing": {
			status: newStatus().health(health.HealthStatusHealthy, &started).others().obj(),
			want:   newStatus().health(health.HealthStatusHealthy, &started).others().obj(),
		},
		"first feedback fills an empty status": {
			feedback: full,
			want: newStatus().health(health.HealthStatusHealthy, &now).sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").
				operation(synccommon.OperationSucceeded, started).obj(),
			wantChanged: true,
		},
		"identical feedback changes nothing": {
			status: newStatus().health(health.HealthStatusHealthy, &started).sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").
				operation(synccommon.OperationSucceeded, started).others().obj(),
			feedback: full,
			want: newStatus().health(health.HealthStatusHealthy, &started).sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").
				operation(synccommon.OperationSucceeded, started).others().obj(),
		},
		"Progressing to Healthy; other fields preserved": {
			status: newStatus().health(health.HealthStatusProgressing, &started).sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").
				operation(synccommon.OperationSucceeded, started).others().obj(),
			feedback: full,
			want: newStatus().health(health.HealthStatusHealthy, &now).sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").
				operation(synccommon.OperationSucceeded, started).others().obj(),
			wantChanged: true,
		},
		"new operation: phase and start time replaced, message and result kept": {
			status: newStatus().health(health.HealthStatusHealthy, &started).sync(argov1alpha1.SyncStatusCodeOutOfSync, "old").
				operation(synccommon.OperationSucceeded, started).others().obj(),
			feedback: Feedback{OperationPhase: ptr.To(synccommon.OperationRunning), OperationStartedAt: &later},
			want: newStatus().health(health.HealthStatusHealthy, &started).sync(argov1alpha1.SyncStatusCodeOutOfSync, "old").
				operation(synccommon.OperationRunning, later).others().obj(),
			wantChanged: true,
		},
		"only the revision changed": {
			status:      newStatus().sync(argov1alpha1.SyncStatusCodeSynced, "old").obj(),
			feedback:    Feedback{Revision: ptr.To("new")},
			want:        newStatus().sync(argov1alpha1.SyncStatusCodeSynced, "new").obj(),
			wantChanged: true,
		},
		"same start time at a finer precision is no change": {
			status:   newStatus().operation(synccommon.OperationSucceeded, started).obj(),
			feedback: Feedback{OperationStartedAt: ptr.To(metav1.NewTime(started.Add(300 * time.Millisecond)))},
			want:     newStatus().operation(synccommon.OperationSucceeded, started).obj(),
		},
		"a start time without a phase makes no operation state": {
			feedback: Feedback{OperationStartedAt: &started},
		},
		"a phase without a start time gets now until the start time arrives": {
			feedback:    Feedback{OperationPhase: ptr.To(synccommon.OperationRunning)},
			want:        newStatus().operation(synccommon.OperationRunning, now).obj(),
			wantChanged: true,
		},
		"a start time alone updates an existing operation state": {
			status:      newStatus().operation(synccommon.OperationRunning, now).obj(),
			feedback:    Feedback{OperationStartedAt: &started},
			want:        newStatus().operation(synccommon.OperationRunning, started).obj(),
			wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := *tc.status.DeepCopy()
			changed := MergeFeedback(&got, tc.feedback, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(argov1alpha1.ApplicationDestination{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
