// Package report owns the vocabulary of an Application's state on both sides of the pull
// model: converting Argo CD's Application status into the agent's report and back, which
// resources and conditions need attention first, and how long texts are shortened. It is
// pure: no clients, no clock, the same input always gives the same output, so writers can
// compare a new result with the last one and write only on change.
package report

import (
	"cmp"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// maxRevisionLength is the schema's bound on one sync revision.
const maxRevisionLength = 256

// FromApplication returns the report status of app, within the ApplicationStatusReport bounds.
// ObservedAt is left zero: when the agent observed the Application is the caller's to say.
//
// tree is Argo CD's resource tree of app, as Argo CD keeps it in Redis, or nil when it was
// not read. It matters only when the Application does not hold its resources' health
// (status.resourceHealthSource: appTree, Argo CD v3's default): then each resource's
// health comes from its node in the tree, the children are summarised in ResourceTree,
// and ResourceHealthSource says redisTree. Without a tree such a report carries no
// per-resource health and says appTree. When the Application holds the health (Argo CD
// 2.x, or persistence on) the tree is not used.
func FromApplication(app *argov1alpha1.Application, tree *argov1alpha1.ApplicationTree) appsv1alpha1.ApplicationReportStatus {
	var t truncation
	st := &app.Status
	out := appsv1alpha1.ApplicationReportStatus{
		Sync: appsv1alpha1.SyncReport{
			Status:    syncStatus(st.Sync.Status),
			Revision:  t.revision(st.Sync.Revision),
			Revisions: t.revisions(st.Sync.Revisions),
			// Only a digest, so never truncated.
			ComparedSources: ComparedSourcesDigest(&st.Sync.ComparedTo),
		},
		Health: appsv1alpha1.HealthReport{
			Status:  healthStatus(string(st.Health.Status)),
			Message: t.message(st.Health.Message, appsv1alpha1.MaxMessageLength),
		},
		OperationState: operationState(st.OperationState, &t),
		Conditions:     conditions(st.Conditions, &t),
	}
	healthOf := healthInApplication
	if st.ResourceHealthSource == argov1alpha1.ResourceHealthLocationAppTree {
		out.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceAppTree
		if tree != nil {
			nodes := indexTree(tree)
			healthOf = nodes.healthOf
			out.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceRedisTree
			out.ResourceTree = nodes.summary(st.Resources, &t)
		}
	}
	out.Resources = resources(st.Resources, healthOf, &t)
	out.Truncation = t.result()
	return out
}

// syncStatus maps Argo CD's sync status onto the report's enum. An empty status stays
// empty (Argo CD has not compared yet); a value this version does not know becomes
// Unknown rather than a report the API server refuses.
func syncStatus(s argov1alpha1.SyncStatusCode) appsv1alpha1.SyncStatusCode {
	switch c := appsv1alpha1.SyncStatusCode(s); c {
	case "", appsv1alpha1.SyncStatusSynced, appsv1alpha1.SyncStatusOutOfSync, appsv1alpha1.SyncStatusUnknown:
		return c
	default:
		return appsv1alpha1.SyncStatusUnknown
	}
}

// healthStatus maps Argo CD's health status onto the report's enum, like syncStatus.
func healthStatus(s string) appsv1alpha1.HealthStatusCode {
	switch c := appsv1alpha1.HealthStatusCode(s); c {
	case "", appsv1alpha1.HealthStatusHealthy, appsv1alpha1.HealthStatusProgressing, appsv1alpha1.HealthStatusDegraded,
		appsv1alpha1.HealthStatusSuspended, appsv1alpha1.HealthStatusMissing, appsv1alpha1.HealthStatusUnknown:
		return c
	default:
		return appsv1alpha1.HealthStatusUnknown
	}
}

// operationState reports the last operation. An operation state without a phase, or with
// one this version does not know, is left out: the phase is required and guessing one
// would misreport the operation.
func operationState(op *argov1alpha1.OperationState, t *truncation) *appsv1alpha1.OperationStateReport {
	if op == nil {
		return nil
	}
	phase := appsv1alpha1.OperationPhase(op.Phase)
	switch phase {
	case appsv1alpha1.OperationRunning, appsv1alpha1.OperationTerminating, appsv1alpha1.OperationFailed,
		appsv1alpha1.OperationError, appsv1alpha1.OperationSucceeded:
	default:
		return nil
	}
	out := &appsv1alpha1.OperationStateReport{
		Phase:   phase,
		Message: t.message(op.Message, appsv1alpha1.MaxMessageLength),
	}
	if !op.StartedAt.IsZero() {
		started := op.StartedAt
		out.StartedAt = &started
	}
	if op.FinishedAt != nil {
		finished := *op.FinishedAt
		out.FinishedAt = &finished
	}
	return out
}

// conditions reports the Application's conditions in Argo CD's order. When there are
// more than the report holds, errors are kept before warnings.
func conditions(in []argov1alpha1.ApplicationCondition, t *truncation) []appsv1alpha1.ApplicationConditionReport {
	if len(in) == 0 {
		return nil
	}
	kept := make([]argov1alpha1.ApplicationCondition, 0, len(in))
	for _, c := range in {
		// The report requires a type; a condition without one says nothing a reader can use.
		if c.Type == "" || len(c.Type) > maxConditionTypeLength {
			t.omittedConditions++
			continue
		}
		kept = append(kept, c)
	}
	if len(kept) > appsv1alpha1.MaxConditions {
		slices.SortStableFunc(kept, func(a, b argov1alpha1.ApplicationCondition) int {
			return cmp.Compare(ConditionRank(a.Type), ConditionRank(b.Type))
		})
		t.omittedConditions += len(kept) - appsv1alpha1.MaxConditions
		kept = kept[:appsv1alpha1.MaxConditions]
	}
	out := make([]appsv1alpha1.ApplicationConditionReport, 0, len(kept))
	for _, c := range kept {
		r := appsv1alpha1.ApplicationConditionReport{
			Type:    c.Type,
			Message: t.message(c.Message, appsv1alpha1.MaxMessageLength),
		}
		if c.LastTransitionTime != nil {
			ltt := *c.LastTransitionTime
			r.LastTransitionTime = &ltt
		}
		out = append(out, r)
	}
	return out
}

// maxConditionTypeLength is the schema's bound on a condition type.
const maxConditionTypeLength = 128
