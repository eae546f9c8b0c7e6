package report

import (
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
)

// The hub shows a pulled Application's reported details in Argo CD's own form, so the hub's
// Argo CD UI and CLI read them like any Application's.

// ToArgoResources converts reported resources to Argo CD's form; nil for none.
func ToArgoResources(in []appsv1alpha1.ResourceStatusReport) []argov1alpha1.ResourceStatus {
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

// ToArgoConditions converts reported conditions to Argo CD's form; nil for none.
func ToArgoConditions(in []appsv1alpha1.ApplicationConditionReport) []argov1alpha1.ApplicationCondition {
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
