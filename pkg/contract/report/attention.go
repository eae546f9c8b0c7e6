package report

import (
	"cmp"
	"slices"
	"strings"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// Attention ranks, lower is worse. A resource ranked below rankOnItsWay is failing; one
// ranked below rankFine needs attention (and is kept first when a list is cut).
const (
	rankDegraded      = 0
	rankMissing       = 1
	rankOutOfSync     = 2
	rankHealthUnknown = 3
	rankSyncUnknown   = 4
	// rankOnItsWay: not failing but not done either (Progressing, Suspended, not compared yet).
	rankOnItsWay = 5
	// rankFine: Synced and Healthy, or Synced without a health.
	rankFine = 6
)

// AttentionRank is how badly a resource in the given sync and health states needs
// attention: broken health first (Degraded, Missing), then out of sync, then unknown
// health, then unknown sync; Progressing and Suspended resources are on their way, not
// failing. health "" means the resource has no health.
func AttentionRank(sync appsv1alpha1.SyncStatusCode, health appsv1alpha1.HealthStatusCode) int {
	switch health {
	case appsv1alpha1.HealthStatusDegraded:
		return rankDegraded
	case appsv1alpha1.HealthStatusMissing:
		return rankMissing
	case appsv1alpha1.HealthStatusUnknown:
		return rankHealthUnknown
	}
	switch sync {
	case appsv1alpha1.SyncStatusOutOfSync:
		return rankOutOfSync
	case appsv1alpha1.SyncStatusUnknown:
		return rankSyncUnknown
	case appsv1alpha1.SyncStatusSynced:
		if health == "" || health == appsv1alpha1.HealthStatusHealthy {
			return rankFine
		}
	}
	return rankOnItsWay
}

// Failing tells whether a resource in these states is failing (see AttentionRank).
func Failing(sync appsv1alpha1.SyncStatusCode, health appsv1alpha1.HealthStatusCode) bool {
	return AttentionRank(sync, health) < rankOnItsWay
}

func healthStatusOf(h *appsv1alpha1.ResourceHealthReport) appsv1alpha1.HealthStatusCode {
	if h == nil {
		return ""
	}
	return h.Status
}

// FailingResources are the reported resources that are failing, most severe first (see
// AttentionRank), in the report's order otherwise.
func FailingResources(in []appsv1alpha1.ResourceStatusReport) []appsv1alpha1.FailingResource {
	var out []appsv1alpha1.FailingResource
	for _, r := range in {
		if !Failing(r.Status, healthStatusOf(r.Health)) {
			continue
		}
		fr := appsv1alpha1.FailingResource{
			APIVersion: APIVersion(r.Group, r.Version), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			SyncStatus: string(r.Status),
		}
		if r.Health != nil {
			fr.HealthStatus, fr.Message = string(r.Health.Status), r.Health.Message
		}
		out = append(out, fr)
	}
	SortFailing(out)
	return out
}

// NotHealthyChildren are the not-healthy children of a report's resource tree as
// failing resources naming their parent, in the report's order (most severe first).
func NotHealthyChildren(tree *appsv1alpha1.ResourceTreeReport) []appsv1alpha1.FailingResource {
	if tree == nil || len(tree.NotHealthy) == 0 {
		return nil
	}
	out := make([]appsv1alpha1.FailingResource, 0, len(tree.NotHealthy))
	for _, c := range tree.NotHealthy {
		out = append(out, appsv1alpha1.FailingResource{
			APIVersion: APIVersion(c.Group, c.Version), Kind: c.Kind, Namespace: c.Namespace, Name: c.Name,
			HealthStatus: string(c.Health.Status), Message: c.Health.Message, Parent: c.Parent,
		})
	}
	return out
}

// SortFailing orders failing resources most severe first (see AttentionRank), keeping
// the order of equally severe ones.
func SortFailing(resources []appsv1alpha1.FailingResource) {
	slices.SortStableFunc(resources, func(a, b appsv1alpha1.FailingResource) int {
		return cmp.Compare(
			AttentionRank(appsv1alpha1.SyncStatusCode(a.SyncStatus), appsv1alpha1.HealthStatusCode(a.HealthStatus)),
			AttentionRank(appsv1alpha1.SyncStatusCode(b.SyncStatus), appsv1alpha1.HealthStatusCode(b.HealthStatus)))
	})
}

// ConditionRank orders condition types: 0 for errors (Argo CD's "...Error" types, a
// failed operation, a ManifestWork not applied or not available), 1 for warnings and the
// rest.
func ConditionRank(conditionType string) int {
	switch conditionType {
	case appsv1alpha1.ConditionOperationFailed, appsv1alpha1.ConditionManifestWorkNotApplied, appsv1alpha1.ConditionManifestWorkNotAvailable:
		return 0
	}
	if strings.HasSuffix(conditionType, "Error") {
		return 0
	}
	return 1
}

// SortConditions orders conditions errors first (ConditionRank), keeping the order
// within each rank.
func SortConditions(conditions []appsv1alpha1.Condition) {
	slices.SortStableFunc(conditions, func(a, b appsv1alpha1.Condition) int {
		return cmp.Compare(ConditionRank(a.Type), ConditionRank(b.Type))
	})
}

// FailedOperation is the condition saying why the last operation failed, when it did and
// Argo CD said why.
func FailedOperation(phase appsv1alpha1.OperationPhase, message string) (appsv1alpha1.Condition, bool) {
	if message == "" || (phase != appsv1alpha1.OperationFailed && phase != appsv1alpha1.OperationError) {
		return appsv1alpha1.Condition{}, false
	}
	return appsv1alpha1.Condition{Type: appsv1alpha1.ConditionOperationFailed, Message: message}, true
}

// APIVersion is "group/version", or "version" for the core group.
func APIVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}
