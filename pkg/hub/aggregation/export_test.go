package aggregation

import (
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Build is the report of one ApplicationSet built from scratch (buildReusing without a
// memo).
func Build(in Inputs, limits Limits) appsv1alpha1.AppConditions {
	out, _ := buildReusing(in, limits, nil)
	return out
}

// Desired is the report of the ApplicationSet appSet built from in: its name, namespace,
// label and owner reference, and its statuses within limits.
func Desired(appSet *metav1.PartialObjectMetadata, in Inputs, limits Limits) *appsv1alpha1.MulticlusterApplicationSetReport {
	return desiredReport(appSet, Build(in, limits))
}
