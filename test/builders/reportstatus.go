package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// ReportStatusBuilder builds what an agent reports about one Application (the status of
// an ApplicationStatusReport). Build returns a copy.
type ReportStatusBuilder struct {
	s appsv1alpha1.ApplicationReportStatus
}

// ReportStatus starts a report the agent made at observedAt, with nothing in it yet.
func ReportStatus(observedAt metav1.Time) *ReportStatusBuilder {
	return &ReportStatusBuilder{s: appsv1alpha1.ApplicationReportStatus{ObservedAt: observedAt}}
}

// Build returns the report status built so far.
func (b *ReportStatusBuilder) Build() *appsv1alpha1.ApplicationReportStatus {
	return b.s.DeepCopy()
}

// State sets the health with its message, and the sync status with its revision.
func (b *ReportStatusBuilder) State(health appsv1alpha1.HealthStatusCode, message string, sync appsv1alpha1.SyncStatusCode, revision string) *ReportStatusBuilder {
	b.s.Health = appsv1alpha1.HealthReport{Status: health, Message: message}
	b.s.Sync = appsv1alpha1.SyncReport{Status: sync, Revision: revision}
	return b
}

// Operation sets the last operation: its phase, start, finish and message.
func (b *ReportStatusBuilder) Operation(phase appsv1alpha1.OperationPhase, startedAt, finishedAt metav1.Time, message string) *ReportStatusBuilder {
	b.s.OperationState = &appsv1alpha1.OperationStateReport{Phase: phase, StartedAt: &startedAt, FinishedAt: &finishedAt, Message: message}
	return b
}

// Condition adds an Argo CD condition that last changed at lastTransition.
func (b *ReportStatusBuilder) Condition(conditionType, message string, lastTransition metav1.Time) *ReportStatusBuilder {
	b.s.Conditions = append(b.s.Conditions, appsv1alpha1.ApplicationConditionReport{Type: conditionType, Message: message, LastTransitionTime: &lastTransition})
	return b
}

// Resource adds a managed resource.
// Revisions sets the sync revisions of a multi-source Application, one per source.
func (b *ReportStatusBuilder) Revisions(revisions ...string) *ReportStatusBuilder {
	b.s.Sync.Revisions = revisions
	return b
}

func (b *ReportStatusBuilder) Resource(r appsv1alpha1.ResourceStatusReport) *ReportStatusBuilder {
	b.s.Resources = append(b.s.Resources, r)
	return b
}
