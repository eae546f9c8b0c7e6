package reporttable

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// newReport is the report of ApplicationSet argocd/name.
func newReport(name string, summary appsv1alpha1.ReportSummary, entries ...*builders.ClusterEntryBuilder) appsv1alpha1.MulticlusterApplicationSetReport {
	r := appsv1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}}
	r.Statuses.Summary = summary
	for _, e := range entries {
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, e.Build())
	}
	return r
}
