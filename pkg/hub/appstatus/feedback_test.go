package appstatus

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var (
	started = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	later   = metav1.NewTime(time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC))
	now     = metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
)

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

func TestMirrorScalars(t *testing.T) {
	full := pullmodel.Scalars{
		Health:             ptr.To(health.HealthStatusHealthy),
		Sync:               ptr.To(argov1alpha1.SyncStatusCodeSynced),
		Revision:           ptr.To("8f3c2b1"),
		OperationPhase:     ptr.To(synccommon.OperationSucceeded),
		OperationStartedAt: &started,
	}
	tests := map[string]struct {
		status      argov1alpha1.ApplicationStatus
		feedback    pullmodel.Scalars
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
			feedback: pullmodel.Scalars{OperationPhase: ptr.To(synccommon.OperationRunning), OperationStartedAt: &later},
			want: newStatus().health(health.HealthStatusHealthy, &started).sync(argov1alpha1.SyncStatusCodeOutOfSync, "old").
				operation(synccommon.OperationRunning, later).others().obj(),
			wantChanged: true,
		},
		"only the revision changed": {
			status:      newStatus().sync(argov1alpha1.SyncStatusCodeSynced, "old").obj(),
			feedback:    pullmodel.Scalars{Revision: ptr.To("new")},
			want:        newStatus().sync(argov1alpha1.SyncStatusCodeSynced, "new").obj(),
			wantChanged: true,
		},
		"same start time at a finer precision is no change": {
			status:   newStatus().operation(synccommon.OperationSucceeded, started).obj(),
			feedback: pullmodel.Scalars{OperationStartedAt: ptr.To(metav1.NewTime(started.Add(300 * time.Millisecond)))},
			want:     newStatus().operation(synccommon.OperationSucceeded, started).obj(),
		},
		"a start time without a phase makes no operation state": {
			feedback: pullmodel.Scalars{OperationStartedAt: &started},
		},
		"a phase without a start time gets now until the start time arrives": {
			feedback:    pullmodel.Scalars{OperationPhase: ptr.To(synccommon.OperationRunning)},
			want:        newStatus().operation(synccommon.OperationRunning, now).obj(),
			wantChanged: true,
		},
		"a start time alone updates an existing operation state": {
			status:      newStatus().operation(synccommon.OperationRunning, now).obj(),
			feedback:    pullmodel.Scalars{OperationStartedAt: &started},
			want:        newStatus().operation(synccommon.OperationRunning, started).obj(),
			wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := *tc.status.DeepCopy()
			changed := mirrorScalars(&got, tc.feedback, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(argov1alpha1.ApplicationDestination{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
