package appstatus

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// degradedGuestbook is the resource a failed sync of the guestbook leaves behind.
var degradedGuestbook = appsv1alpha1.ResourceStatusReport{
	Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
	Status: appsv1alpha1.SyncStatusOutOfSync, Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1"},
}

func TestMirrorReportDetails(t *testing.T) {
	failed := builders.ReportStatus(later).State(appsv1alpha1.HealthStatusDegraded, "0/1 ready", appsv1alpha1.SyncStatusOutOfSync, "r").
		Operation(appsv1alpha1.OperationFailed, started, later, "failed to apply").Condition("SyncError", "Deployment guestbook-ui failed", started).Resource(degradedGuestbook).Build()
	wantResources := []argov1alpha1.ResourceStatus{{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
		Status: argov1alpha1.SyncStatusCodeOutOfSync, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "0/1"},
	}}
	wantConditions := []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "Deployment guestbook-ui failed", LastTransitionTime: &started}}
	withDetails := func(s argov1alpha1.ApplicationStatus, healthMessage, opMessage string) argov1alpha1.ApplicationStatus {
		s = *s.DeepCopy()
		s.Resources, s.Conditions, s.Health.Message = wantResources, wantConditions, healthMessage
		if s.OperationState != nil && opMessage != "" {
			s.OperationState.Message, s.OperationState.FinishedAt = opMessage, &later
		}
		return s
	}
	hubNotApplied := pullmodel.HubCondition(pullmodel.ConditionClusterApplyError, "not applied")
	hubNotApplied.LastTransitionTime = &started
	degradedFailed := newStatus().health(health.HealthStatusDegraded, &started).operation(synccommon.OperationFailed, started).obj()
	tests := map[string]struct {
		status      argov1alpha1.ApplicationStatus
		report      *appsv1alpha1.ApplicationReportStatus
		want        argov1alpha1.ApplicationStatus
		wantChanged bool
	}{
		"no report and no details: nothing touched": {
			status: newStatus().health(health.HealthStatusHealthy, &started).operation(synccommon.OperationSucceeded, started).obj(),
			want:   newStatus().health(health.HealthStatusHealthy, &started).operation(synccommon.OperationSucceeded, started).obj(),
		},
		"report gone: its details go, the hub's conditions and the scalars stay": {
			status: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.Conditions = append(s.Conditions, hubNotApplied)
				return s
			}(),
			want: func() argov1alpha1.ApplicationStatus {
				s := *degradedFailed.DeepCopy()
				s.Conditions = []argov1alpha1.ApplicationCondition{hubNotApplied}
				return s
			}(),
			wantChanged: true,
		},
		"new spoke conditions replace the old, the hub's stay after them": {
			status: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.Conditions = []argov1alpha1.ApplicationCondition{{Type: "ComparisonError", Message: "old"}, hubNotApplied}
				return s
			}(),
			report: failed,
			want: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.Conditions = append(s.Conditions, hubNotApplied)
				return s
			}(),
			wantChanged: true,
		},
		"the report describes an older operation: the shown one has none of its message and finish": {
			status: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.OperationState.Phase, s.OperationState.StartedAt = synccommon.OperationRunning, now
				return s
			}(),
			report: failed,
			want: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "")
				s.OperationState.Phase, s.OperationState.StartedAt = synccommon.OperationRunning, now
				s.OperationState.Message, s.OperationState.FinishedAt = "", nil
				return s
			}(),
			wantChanged: true,
		},
		"report details fill the status of the same operation": {
			status:      degradedFailed,
			report:      failed,
			want:        withDetails(degradedFailed, "0/1 ready", "failed to apply"),
			wantChanged: true,
		},
		"already mirrored: no change": {
			status: withDetails(degradedFailed, "0/1 ready", "failed to apply"),
			report: failed,
			want:   withDetails(degradedFailed, "0/1 ready", "failed to apply"),
		},
		"health shown is not the reported one (feedback won): its message is not the report's": {
			status:      newStatus().health(health.HealthStatusHealthy, &started).operation(synccommon.OperationRunning, now).obj(),
			report:      failed,
			want:        withDetails(newStatus().health(health.HealthStatusHealthy, &started).operation(synccommon.OperationRunning, now).obj(), "", ""),
			wantChanged: true,
		},
		"multi-source: the report's revisions mirrored, one per source": {
			status: withDetails(degradedFailed, "0/1 ready", "failed to apply"),
			report: builders.ReportStatus(later).State(appsv1alpha1.HealthStatusDegraded, "0/1 ready", appsv1alpha1.SyncStatusOutOfSync, "r").
				Operation(appsv1alpha1.OperationFailed, started, later, "failed to apply").Condition("SyncError", "Deployment guestbook-ui failed", started).
				Resource(degradedGuestbook).Revisions("r1", "r2").Build(),
			want: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.Sync.Revisions = []string{"r1", "r2"}
				return s
			}(),
			wantChanged: true,
		},
		"no resources or conditions any more: cleared": {
			status: withDetails(degradedFailed, "0/1 ready", "failed to apply"),
			report: builders.ReportStatus(later).State(appsv1alpha1.HealthStatusDegraded, "0/1 ready", appsv1alpha1.SyncStatusOutOfSync, "r").Operation(appsv1alpha1.OperationFailed, started, later, "failed to apply").Build(),
			want: func() argov1alpha1.ApplicationStatus {
				s := withDetails(degradedFailed, "0/1 ready", "failed to apply")
				s.Resources, s.Conditions = nil, nil
				return s
			}(),
			wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := *tc.status.DeepCopy()
			changed := mirrorReportDetails(&got, tc.report)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(argov1alpha1.ApplicationDestination{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
