package aggregation

import (
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// desiredReport is the report of the ApplicationSet appSet with statuses: its name,
// namespace, label and owner reference.
func desiredReport(appSet *metav1.PartialObjectMetadata, statuses appsv1alpha1.AppConditions) *appsv1alpha1.MulticlusterApplicationSetReport {
	return &appsv1alpha1.MulticlusterApplicationSetReport{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "MulticlusterApplicationSetReport"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      appSet.Name,
			Namespace: appSet.Namespace,
			Labels: map[string]string{
				appsv1alpha1.LabelHostingApplicationSet: apps.ApplicationSetLabelValue(appSet.Namespace + "/" + appSet.Name),
			},
			// Garbage collection deletes the report with its ApplicationSet; the controller
			// also does, for hubs where that is slow. Not a controller reference: the
			// ApplicationSet controller does not manage the report.
			OwnerReferences: []metav1.OwnerReference{ownerReference(appSet)},
		},
		Statuses: statuses,
	}
}

func ownerReference(appSet *metav1.PartialObjectMetadata) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "ApplicationSet",
		Name: appSet.Name, UID: appSet.UID,
	}
}

// mergeInto makes current carry desired's statuses, label and owner reference, keeping
// everything else of current (other labels, annotations, other owners), and reports
// whether that changed anything.
func mergeInto(current, desired *appsv1alpha1.MulticlusterApplicationSetReport) bool {
	changed := false
	if !equality.Semantic.DeepEqual(current.Statuses, desired.Statuses) {
		// A copy: current is written, and the client decodes the answer into it, while
		// desired's lists may be the memo's (buildReusing).
		current.Statuses = *desired.Statuses.DeepCopy()
		changed = true
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			if current.Labels == nil {
				current.Labels = map[string]string{}
			}
			current.Labels[k] = v
			changed = true
		}
	}
	want := desired.OwnerReferences[0]
	found := false
	for i, ref := range current.OwnerReferences {
		if ref.Kind == want.Kind && ref.APIVersion == want.APIVersion && ref.Name == want.Name {
			found = true
			if ref.UID != want.UID {
				current.OwnerReferences[i].UID = want.UID
				changed = true
			}
		}
	}
	if !found {
		current.OwnerReferences = append(current.OwnerReferences, want)
		changed = true
	}
	return changed
}
