package reports

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
)

// desiredReport is the report of app as the agent wants it on the hub, owned by the
// agent's ManagedClusterAddOn, with tree, Argo CD's resource tree of app, when read.
// ObservedAt is left for the write to set.
func desiredReport(app *argov1alpha1.Application, tree *argov1alpha1.ApplicationTree, clusterName string, owner metav1.OwnerReference) *appsv1alpha1.ApplicationStatusReport {
	source := reportSource(app, clusterName)
	labels := reportLabels(source)
	return &appsv1alpha1.ApplicationStatusReport{
		TypeMeta: metav1.TypeMeta{
			APIVersion: appsv1alpha1.GroupVersion.String(),
			Kind:       "ApplicationStatusReport",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:            report.ReportName(app.Namespace, app.Name),
			Namespace:       clusterName,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Source: source,
		Status: report.FromApplication(app, tree),
	}
}

// reportSource says which Application on cluster clusterName app is and where it came
// from, for its report and its resource tree.
func reportSource(app *argov1alpha1.Application, clusterName string) appsv1alpha1.ApplicationReportSource {
	a := app.GetAnnotations()
	return appsv1alpha1.ApplicationReportSource{
		Cluster:                 clusterName,
		Namespace:               app.Namespace,
		Name:                    app.Name,
		UID:                     string(app.UID),
		HubApplicationNamespace: a[apps.AnnotationHubApplicationNamespace],
		HubApplicationName:      a[apps.AnnotationHubApplicationName],
		ApplicationSet:          a[apps.AnnotationHostingApplicationSet],
	}
}

// reportLabels are the labels of the report and the resource tree of the Application
// source: the agent's mark (its hub cache selects by it) and the hub Application and
// ApplicationSet, for selecting them on the hub.
func reportLabels(source appsv1alpha1.ApplicationReportSource) map[string]string {
	labels := map[string]string{
		apps.LabelReportManagedBy:      apps.ReportManagedByAgent,
		apps.LabelReportHubApplication: apps.HubApplicationLabelValue(source.HubApplicationNamespace, source.HubApplicationName),
	}
	if source.ApplicationSet != "" {
		labels[apps.LabelReportApplicationSet] = apps.ApplicationSetLabelValue(source.ApplicationSet)
	}
	return labels
}

// DesiredReport is the report the agent wants on the hub for app, a pulled Application on
// cluster clusterName, owned by owner as AddonOwnerReference makes it, without a resource
// tree; ObservedAt is left for the write to set. Benchmarks build their reports with it.
func DesiredReport(app *argov1alpha1.Application, clusterName string, owner metav1.OwnerReference) *appsv1alpha1.ApplicationStatusReport {
	return desiredReport(app, nil, clusterName, owner)
}

// sameContent says whether current already says what desired says: the agent's labels,
// owner, source and status, ignoring ObservedAt (the time of the last write).
func sameContent(current, desired *appsv1alpha1.ApplicationStatusReport) bool {
	if !sameAgentMetadata(current, desired) || current.Source != desired.Source {
		return false
	}
	cs, ds := current.Status, desired.Status
	cs.ObservedAt, ds.ObservedAt = metav1.Time{}, metav1.Time{}
	return equality.Semantic.DeepEqual(cs, ds)
}

// sameAgentMetadata says whether current carries the owner and the labels the agent gives
// desired (owners and labels someone else added do not matter).
func sameAgentMetadata(current, desired metav1.Object) bool {
	for _, want := range desired.GetOwnerReferences() {
		if !hasOwner(current.GetOwnerReferences(), want) {
			return false
		}
	}
	for k, v := range desired.GetLabels() {
		if current.GetLabels()[k] != v {
			return false
		}
	}
	_, currentSet := current.GetLabels()[apps.LabelReportApplicationSet]
	return !currentSet || desired.GetLabels()[apps.LabelReportApplicationSet] != ""
}

// hasOwner says whether refs hold want; owners someone else added do not matter.
func hasOwner(refs []metav1.OwnerReference, want metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.UID == want.UID && r.Kind == want.Kind && r.APIVersion == want.APIVersion && r.Name == want.Name {
			return true
		}
	}
	return false
}
