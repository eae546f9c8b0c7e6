package pullmodel

import (
	"time"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
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
func MergeScalars(feedback Scalars, report *appsv1alpha1.ApplicationReportStatus, agentAvailable bool) (Scalars, ScalarSource) {
	if report == nil || !agentAvailable {
		return feedback, SourceFeedback
	}
	if feedback.OperationStartedAt != nil &&
		feedback.OperationStartedAt.Time.Truncate(time.Second).After(report.ObservedAt.Time.Truncate(time.Second)) {
		return feedback, SourceFeedback
	}
	merged := scalarsFromReport(report)
	if merged.Health == nil {
		merged.Health = feedback.Health
	}
	if merged.Sync == nil {
		merged.Sync = feedback.Sync
	}
	if merged.Revision == nil {
		merged.Revision = feedback.Revision
	}
	if merged.OperationPhase == nil {
		merged.OperationPhase, merged.OperationStartedAt = feedback.OperationPhase, feedback.OperationStartedAt
	}
	return merged, SourceReport
}

// scalarsFromReport reads the scalars of an agent's report; an empty value is not carried.
func scalarsFromReport(report *appsv1alpha1.ApplicationReportStatus) Scalars {
	var s Scalars
	if report == nil {
		return s
	}
	if v := report.Health.Status; v != "" {
		h := health.HealthStatusCode(v)
		s.Health = &h
	}
	if v := report.Sync.Status; v != "" {
		c := argov1alpha1.SyncStatusCode(v)
		s.Sync = &c
	}
	if r := report.Sync.Revision; r != "" {
		s.Revision = &r
	}
	if op := report.OperationState; op != nil && op.Phase != "" {
		p := synccommon.OperationPhase(op.Phase)
		s.OperationPhase = &p
		if op.StartedAt != nil {
			t := *op.StartedAt
			s.OperationStartedAt = &t
		}
	}
	return s
}

// A change of the hub Application's sources reaches the cluster's Argo CD through the
// ManifestWork, which compares it and only then says OutOfSync; until the agent reports
// that comparison, both sources still describe the old spec as Synced. An ApplicationSet's
// RollingSync puts an Application back to Waiting only once it shows OutOfSync, and moves
// to the next step when the previous step's Applications show Synced and Healthy, so a
// cluster that compares late would be skipped over. The hub therefore shows OutOfSync
// from the moment its sources differ from the ones the cluster last compared, as Argo CD
// treats an Application whose spec sources differ from status.sync.comparedTo as not yet
// compared.

// OutOfSyncUntilCompared returns s showing OutOfSync when the hub Application's sources
// (hubSources: report.SpecSourcesDigest of its spec) differ from those the available
// agent last reported compared (sync.comparedSources). An unavailable agent's report,
// or one from an agent that does not report comparedSources, says nothing about it.
func OutOfSyncUntilCompared(s Scalars, report *appsv1alpha1.ApplicationReportStatus, agentAvailable bool, hubSources string) Scalars {
	if !agentAvailable || report == nil || report.Sync.ComparedSources == "" || hubSources == "" ||
		report.Sync.ComparedSources == hubSources {
		return s
	}
	outOfSync := argov1alpha1.SyncStatusCodeOutOfSync
	s.Sync = &outOfSync
	return s
}
