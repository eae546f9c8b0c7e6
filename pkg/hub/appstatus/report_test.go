package appstatus

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// reportStatus is a fixture builder for agent report statuses.
type reportStatus struct {
	s appsv1alpha1.ApplicationReportStatus
}

func newReportStatus(observedAt metav1.Time) *reportStatus {
	return &reportStatus{s: appsv1alpha1.ApplicationReportStatus{ObservedAt: observedAt}}
}

func (b *reportStatus) state(h appsv1alpha1.HealthStatusCode, message string, s appsv1alpha1.SyncStatusCode, revision string) *reportStatus {
	b.s.Health = appsv1alpha1.HealthReport{Status: h, Message: message}
	b.s.Sync = appsv1alpha1.SyncReport{Status: s, Revision: revision}
	return b
}

func (b *reportStatus) operation(phase appsv1alpha1.OperationPhase, startedAt metav1.Time, message string) *reportStatus {
	b.s.OperationState = &appsv1alpha1.OperationStateReport{Phase: phase, StartedAt: &startedAt, Message: message, FinishedAt: &later}
	return b
}

func (b *reportStatus) details() *reportStatus {
	b.s.Conditions = []appsv1alpha1.ApplicationConditionReport{{Type: "SyncError", Message: "Deployment guestbook-ui failed", LastTransitionTime: &started}}
	b.s.Resources = []appsv1alpha1.ResourceStatusReport{{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
		Status: appsv1alpha1.SyncStatusOutOfSync, Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1"},
	}}
	return b
}

func (b *reportStatus) obj() *appsv1alpha1.ApplicationReportStatus { return b.s.DeepCopy() }

func TestMergeScalars(t *testing.T) {
	fbAt := func(startedAt metav1.Time) Feedback {
		return Feedback{
			Health: ptr.To(health.HealthStatusProgressing), Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced), Revision: ptr.To("fb"),
			OperationPhase: ptr.To(synccommon.OperationRunning), OperationStartedAt: &startedAt,
		}
	}
	reported := newReportStatus(later).state(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "rep").
		operation(appsv1alpha1.OperationSucceeded, started, "").obj()
	fromReport := Feedback{
		Health: ptr.To(health.HealthStatusHealthy), Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced), Revision: ptr.To("rep"),
		OperationPhase: ptr.To(synccommon.OperationSucceeded), OperationStartedAt: &started,
	}
	tests := map[string]struct {
		fb         Feedback
		report     *appsv1alpha1.ApplicationReportStatus
		available  bool
		want       Feedback
		wantSource ScalarSource
	}{
		"no report: feedback": {
			fb: fbAt(started), available: true, want: fbAt(started), wantSource: SourceFeedback,
		},
		"agent not available: feedback, however new the report": {
			fb: fbAt(started), report: reported, want: fbAt(started), wantSource: SourceFeedback,
		},
		"report observed after the feedback's operation started: report": {
			fb: fbAt(started), report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"report observed the same second the operation started: report (at least as new)": {
			fb: fbAt(later), report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"feedback shows an operation started after the report: feedback": {
			fb: fbAt(now), report: reported, available: true, want: fbAt(now), wantSource: SourceFeedback,
		},
		"feedback without an operation: report": {
			fb: Feedback{Health: ptr.To(health.HealthStatusDegraded)}, report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"report without values: the feedback fills them": {
			fb: fbAt(started), report: newReportStatus(later).obj(), available: true, want: fbAt(started), wantSource: SourceReport,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, source := MergeScalars(tc.fb, tc.report, tc.available)
			if source != tc.wantSource {
				t.Errorf("source = %s, want %s", source, tc.wantSource)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scalars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeReportDetails(t *testing.T) {
	failed := newReportStatus(later).state(appsv1alpha1.HealthStatusDegraded, "0/1 ready", appsv1alpha1.SyncStatusOutOfSync, "r").
		operation(appsv1alpha1.OperationFailed, started, "failed to apply").details().obj()
	wantResources := []argov1alpha1.ResourceStatus{{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
		Status: argov1alpha1.SyncStatusCodeOutOfSync, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "0/1"},
	}}
	wantConditions := []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "Deployment guestbook-ui failed", LastTransitionTime: &started}}
	withDetails := func(s argov1alpha1.ApplicationStatus, healthMessage, opMessage string) argov1alpha1.ApplicationStatus {
		s.Resources, s.Conditions, s.Health.Message = wantResources, wantConditions, healthMessage
		if s.OperationState != nil && opMessage != "" {
			s.OperationState.Message, s.OperationState.FinishedAt = opMessage, &later
		}
		return s
	}
	degradedFailed := newStatus().health(health.HealthStatusDegraded, &started).operation(synccommon.OperationFailed, started).obj()
	tests := map[string]struct {
		status      argov1alpha1.ApplicationStatus
		report      *appsv1alpha1.ApplicationReportStatus
		want        argov1alpha1.ApplicationStatus
		wantChanged bool
	}{
		"no report: nothing touched": {
			status: newStatus().health(health.HealthStatusHealthy, &started).others().obj(),
			want:   newStatus().health(health.HealthStatusHealthy, &started).others().obj(),
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
		"no resources or conditions any more: cleared": {
			status: withDetails(degradedFailed, "0/1 ready", "failed to apply"),
			report: newReportStatus(later).state(appsv1alpha1.HealthStatusDegraded, "0/1 ready", appsv1alpha1.SyncStatusOutOfSync, "r").operation(appsv1alpha1.OperationFailed, started, "failed to apply").obj(),
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
			changed := MergeReportDetails(&got, tc.report)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(argov1alpha1.ApplicationDestination{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentAvailabilityOf(t *testing.T) {
	mca := func(conditions ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: started},
			Status:     addonv1alpha1.ManagedClusterAddOnStatus{Conditions: conditions},
		}
	}
	available := func(s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: s, Reason: "Lease", LastTransitionTime: later}
	}
	tests := map[string]struct {
		mca  *addonv1alpha1.ManagedClusterAddOn
		want AgentAvailability
	}{
		"no addon":               {want: AgentAvailability{Reason: "the argocd-pull addon is not enabled on the cluster"}},
		"no Available condition": {mca: mca(), want: AgentAvailability{Since: &started, Reason: "the agent has not reported available yet"}},
		"Available True":         {mca: mca(available(metav1.ConditionTrue)), want: AgentAvailability{Available: true, Since: &later}},
		"Available Unknown":      {mca: mca(available(metav1.ConditionUnknown)), want: AgentAvailability{Since: &later, Reason: "Available is Unknown (Lease)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AgentAvailabilityOf(tc.mca)); diff != "" {
				t.Errorf("availability (-want +got):\n%s", diff)
			}
		})
	}
}
