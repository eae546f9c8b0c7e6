package report

import (
	"cmp"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// Schema bounds of a resource's identity. Kubernetes keeps real resources within them;
// a resource outside them is left out rather than make the API server refuse the report.
const (
	maxGroupLength     = 253
	maxVersionLength   = 63
	maxKindLength      = 63
	maxNamespaceLength = 63
	maxNameLength      = 253
)

// resources reports the Application's resources sorted by group, kind, namespace, name
// and version, so the report does not change when Argo CD lists them in another order.
// When there are more than the report holds, the ones that need attention (not Synced,
// or with a health other than Healthy) are kept first.
//
// healthOf gives a resource's health: from the Application (healthInApplication) or
// from Argo CD's resource tree; nil for none.
func resources(in []argov1alpha1.ResourceStatus, healthOf func(*argov1alpha1.ResourceStatus) *argov1alpha1.HealthStatus, t *truncation) []appsv1alpha1.ResourceStatusReport {
	if len(in) == 0 {
		return nil
	}
	out := make([]appsv1alpha1.ResourceStatusReport, 0, len(in))
	for i := range in {
		r := &in[i]
		if !validResourceIdentity(r) {
			t.omittedResources++
			continue
		}
		rep := appsv1alpha1.ResourceStatusReport{
			Group:     r.Group,
			Version:   r.Version,
			Kind:      r.Kind,
			Namespace: r.Namespace,
			Name:      r.Name,
			Status:    syncStatus(r.Status),
		}
		// Health only when Argo CD computed one: never invent one.
		if h := healthOf(r); h != nil {
			rep.Health = &appsv1alpha1.ResourceHealthReport{
				Status: healthStatus(string(h.Status)),
				// Shortened below, once it is known which resources the report keeps.
				Message: h.Message,
			}
		}
		out = append(out, rep)
	}
	if len(out) > appsv1alpha1.MaxResources {
		slices.SortStableFunc(out, func(a, b appsv1alpha1.ResourceStatusReport) int {
			if c := cmp.Compare(AttentionRank(a.Status, healthStatusOf(a.Health)), AttentionRank(b.Status, healthStatusOf(b.Health))); c != 0 {
				return c
			}
			return compareResources(&a, &b)
		})
		t.omittedResources += len(out) - appsv1alpha1.MaxResources
		out = out[:appsv1alpha1.MaxResources:appsv1alpha1.MaxResources]
	}
	for i := range out {
		if h := out[i].Health; h != nil {
			h.Message = t.message(h.Message, appsv1alpha1.MaxResourceMessageLength)
		}
	}
	slices.SortFunc(out, func(a, b appsv1alpha1.ResourceStatusReport) int { return compareResources(&a, &b) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// healthInApplication is the health Argo CD kept in the Application's resource status.
func healthInApplication(r *argov1alpha1.ResourceStatus) *argov1alpha1.HealthStatus {
	return r.Health
}

func validResourceIdentity(r *argov1alpha1.ResourceStatus) bool {
	return r.Kind != "" && r.Name != "" &&
		len(r.Kind) <= maxKindLength && len(r.Name) <= maxNameLength &&
		len(r.Group) <= maxGroupLength && len(r.Version) <= maxVersionLength &&
		len(r.Namespace) <= maxNamespaceLength
}

func compareResources(a, b *appsv1alpha1.ResourceStatusReport) int {
	return cmp.Or(
		cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Version, b.Version),
	)
}
