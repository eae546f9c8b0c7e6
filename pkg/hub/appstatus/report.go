package appstatus

import (
	"fmt"
	"time"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// Two sources describe a pulled Application: the ManifestWork's status feedback (five
// scalars, polled by the OCM work agent) and the argocd-pull agent's ApplicationStatusReport
// (everything, pushed within about a second of a change). The hub Application and the
// MulticlusterApplicationSetReport both combine them with the rule below, in one
// computation from both inputs, so the two sources can never overwrite each other in turn.
//
// Precedence of the scalars (health, sync, revision, operation phase and start time):
//
//  1. No report: the feedback.
//  2. The cluster's agent is not available: the feedback. The report is the last thing a
//     silent agent said; the work agent still polls the spoke.
//  3. The feedback shows an operation that started after the agent observed the
//     Application (operationStateStartedAt > observedAt, whole seconds): the feedback,
//     which is newer.
//  4. Otherwise the report, which is at least as new: a field the report lacks falls back
//     to the feedback's value.
//
// The details only the report has (resources, conditions, the health and operation
// messages) always come from the report, whichever source gave the scalars.

// ScalarSource names which source gave the scalars.
type ScalarSource string

// Scalar sources.
const (
	SourceFeedback ScalarSource = "feedback"
	SourceReport   ScalarSource = "report"
)

// MergeScalars returns the scalars to show for an Application given its feedback, its
// agent's report (nil when there is none) and whether that agent is available, and which
// source won (see the precedence rule above).
func MergeScalars(fb Feedback, report *appsv1alpha1.ApplicationReportStatus, agentAvailable bool) (Feedback, ScalarSource) {
	if report == nil || !agentAvailable {
		return fb, SourceFeedback
	}
	if fb.OperationStartedAt != nil &&
		fb.OperationStartedAt.Time.Truncate(time.Second).After(report.ObservedAt.Time.Truncate(time.Second)) {
		return fb, SourceFeedback
	}
	merged := ReportScalars(report)
	if merged.Health == nil {
		merged.Health = fb.Health
	}
	if merged.Sync == nil {
		merged.Sync = fb.Sync
	}
	if merged.Revision == nil {
		merged.Revision = fb.Revision
	}
	if merged.OperationPhase == nil {
		merged.OperationPhase, merged.OperationStartedAt = fb.OperationPhase, fb.OperationStartedAt
	}
	return merged, SourceReport
}

// ReportScalars reads the scalars of a report in the form of feedback; an empty value is
// not carried.
func ReportScalars(report *appsv1alpha1.ApplicationReportStatus) Feedback {
	var fb Feedback
	if report == nil {
		return fb
	}
	if s := report.Health.Status; s != "" {
		h := health.HealthStatusCode(s)
		fb.Health = &h
	}
	if s := report.Sync.Status; s != "" {
		c := argov1alpha1.SyncStatusCode(s)
		fb.Sync = &c
	}
	if r := report.Sync.Revision; r != "" {
		fb.Revision = &r
	}
	if op := report.OperationState; op != nil && op.Phase != "" {
		p := synccommon.OperationPhase(op.Phase)
		fb.OperationPhase = &p
		if op.StartedAt != nil {
			t := *op.StartedAt
			fb.OperationStartedAt = &t
		}
	}
	return fb
}

// MergeReportDetails writes what only the agent's report carries into status and reports
// whether anything changed: the resources with their sync and health, the conditions, the
// health message (only while the shown health is the reported one, it explains that
// status) and the operation's message and finish time (only for the operation the report
// describes). Call it after the scalars were merged.
func MergeReportDetails(status *argov1alpha1.ApplicationStatus, report *appsv1alpha1.ApplicationReportStatus) bool {
	if report == nil {
		return false
	}
	changed := false
	resources := ApplicationResources(report.Resources)
	if !equality.Semantic.DeepEqual(status.Resources, resources) {
		status.Resources = resources
		changed = true
	}
	conditions := ApplicationConditions(report.Conditions)
	if !equality.Semantic.DeepEqual(status.Conditions, conditions) {
		status.Conditions = conditions
		changed = true
	}
	healthMessage := ""
	if string(status.Health.Status) == string(report.Health.Status) {
		healthMessage = report.Health.Message
	}
	if status.Health.Message != healthMessage {
		status.Health.Message = healthMessage
		changed = true
	}
	if op, rop := status.OperationState, report.OperationState; op != nil && rop != nil && sameOperation(op, rop) {
		if op.Message != rop.Message {
			op.Message = rop.Message
			changed = true
		}
		if rop.FinishedAt != nil && (op.FinishedAt == nil || !sameSecond(op.FinishedAt.Time, rop.FinishedAt.Time)) {
			t := *rop.FinishedAt
			op.FinishedAt = &t
			changed = true
		}
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

// ApplicationResources converts reported resources to Argo CD's form; nil for none.
func ApplicationResources(in []appsv1alpha1.ResourceStatusReport) []argov1alpha1.ResourceStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]argov1alpha1.ResourceStatus, 0, len(in))
	for _, r := range in {
		rs := argov1alpha1.ResourceStatus{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: argov1alpha1.SyncStatusCode(r.Status),
		}
		if r.Health != nil {
			rs.Health = &argov1alpha1.HealthStatus{Status: health.HealthStatusCode(r.Health.Status), Message: r.Health.Message}
		}
		out = append(out, rs)
	}
	return out
}

// ApplicationConditions converts reported conditions to Argo CD's form; nil for none.
func ApplicationConditions(in []appsv1alpha1.ApplicationConditionReport) []argov1alpha1.ApplicationCondition {
	if len(in) == 0 {
		return nil
	}
	out := make([]argov1alpha1.ApplicationCondition, 0, len(in))
	for _, c := range in {
		ac := argov1alpha1.ApplicationCondition{Type: c.Type, Message: c.Message}
		if c.LastTransitionTime != nil {
			t := *c.LastTransitionTime
			ac.LastTransitionTime = &t
		}
		out = append(out, ac)
	}
	return out
}

// AgentAvailability is what a cluster's ManagedClusterAddOn says about its argocd-pull
// agent.
type AgentAvailability struct {
	// Available is true when the Available condition is True.
	Available bool
	// Since is when the condition last changed, or when the addon was created if it has
	// no Available condition yet; nil when there is no ManagedClusterAddOn.
	Since *metav1.Time
	// Reason explains an unavailable agent in a few words.
	Reason string
}

// AgentAvailabilityOf reads the availability of the agent from its ManagedClusterAddOn;
// mca nil means the addon is not enabled on the cluster.
func AgentAvailabilityOf(mca *addonv1alpha1.ManagedClusterAddOn) AgentAvailability {
	if mca == nil {
		return AgentAvailability{Reason: "the argocd-pull addon is not enabled on the cluster"}
	}
	for i := range mca.Status.Conditions {
		c := &mca.Status.Conditions[i]
		if c.Type != addonv1alpha1.ManagedClusterAddOnConditionAvailable {
			continue
		}
		since := c.LastTransitionTime
		if c.Status == metav1.ConditionTrue {
			return AgentAvailability{Available: true, Since: &since}
		}
		return AgentAvailability{Since: &since, Reason: fmt.Sprintf("Available is %s (%s)", c.Status, c.Reason)}
	}
	created := mca.CreationTimestamp
	return AgentAvailability{Since: &created, Reason: "the agent has not reported available yet"}
}
