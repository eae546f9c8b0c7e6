package aggregation

import (
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC))
	t2 = metav1.NewTime(time.Date(2026, 11, 1, 10, 10, 0, 0, time.UTC))
)

const appSetNamespace = "argocd"

// work is a fixture builder for the ManifestWork of a hub Application owned by the
// ApplicationSet "argocd/guestbook".
type work struct{ w *workv1.ManifestWork }

func newWork(cluster, hubApp string) *work {
	return &work{w: &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: hubApp + "-1a2b3", Namespace: cluster,
			Labels: map[string]string{apps.LabelPullToOCMManagedCluster: "true", apps.LabelApplicationSet: "true"},
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: appSetNamespace,
				apps.AnnotationHubApplicationName:      hubApp,
				apps.AnnotationHostingApplicationSet:   appSetNamespace + "/guestbook",
			},
		},
	}}
}

// feedback sets the Application manifest's status feedback; empty values are left out.
func (b *work) feedback(health, sync, revision, phase, startedAt string) *work {
	var values []workv1.FeedbackValue
	for _, v := range []struct{ name, value string }{
		{pullmodel.FeedbackHealthStatus, health}, {pullmodel.FeedbackSyncStatus, sync},
		{pullmodel.FeedbackSyncRevision, revision}, {pullmodel.FeedbackOperationStatePhase, phase},
		{pullmodel.FeedbackOperationStateStartedAt, startedAt},
	} {
		if v.value != "" {
			values = append(values, workv1.FeedbackValue{Name: v.name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v.value)}})
		}
	}
	b.w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}}
	return b
}

func (b *work) obj() workv1.ManifestWork { return *b.w.DeepCopy() }

// report is a fixture builder for an agent's ApplicationStatusReport.
type reportBuilder struct {
	r *appsv1alpha1.ApplicationStatusReport
}

func newReport(cluster, hubApp string) *reportBuilder {
	return &reportBuilder{r: &appsv1alpha1.ApplicationStatusReport{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd." + hubApp, Namespace: cluster},
		Source: appsv1alpha1.ApplicationReportSource{
			Cluster: cluster, Namespace: "argocd", Name: hubApp,
			HubApplicationNamespace: appSetNamespace, HubApplicationName: hubApp,
			ApplicationSet: appSetNamespace + "/guestbook",
		},
		Status: appsv1alpha1.ApplicationReportStatus{ObservedAt: t1},
	}}
}

func (b *reportBuilder) observedAt(t metav1.Time) *reportBuilder { b.r.Status.ObservedAt = t; return b }

func (b *reportBuilder) state(health appsv1alpha1.HealthStatusCode, sync appsv1alpha1.SyncStatusCode, revision string) *reportBuilder {
	b.r.Status.Health.Status, b.r.Status.Sync.Status, b.r.Status.Sync.Revision = health, sync, revision
	return b
}

func (b *reportBuilder) operation(phase appsv1alpha1.OperationPhase, startedAt metav1.Time, message string) *reportBuilder {
	b.r.Status.OperationState = &appsv1alpha1.OperationStateReport{Phase: phase, StartedAt: &startedAt, Message: message}
	return b
}

func (b *reportBuilder) condition(conditionType, message string) *reportBuilder {
	b.r.Status.Conditions = append(b.r.Status.Conditions, appsv1alpha1.ApplicationConditionReport{Type: conditionType, Message: message})
	return b
}

func (b *reportBuilder) resource(group, version, kind, namespace, name string, sync appsv1alpha1.SyncStatusCode, health appsv1alpha1.HealthStatusCode, message string) *reportBuilder {
	r := appsv1alpha1.ResourceStatusReport{Group: group, Version: version, Kind: kind, Namespace: namespace, Name: name, Status: sync}
	if health != "" {
		r.Health = &appsv1alpha1.ResourceHealthReport{Status: health, Message: message}
	}
	b.r.Status.Resources = append(b.r.Status.Resources, r)
	return b
}

func (b *reportBuilder) revisions(revisions ...string) *reportBuilder {
	b.r.Status.Sync.Revisions = revisions
	return b
}

// child adds a not-healthy child of version v1 in namespace ns to the report's tree.
func (b *reportBuilder) child(kind, name, parent string, health appsv1alpha1.HealthStatusCode, message string) *reportBuilder {
	if b.r.Status.ResourceTree == nil {
		b.r.Status.ResourceTree = &appsv1alpha1.ResourceTreeReport{}
	}
	b.r.Status.ResourceTree.Children++
	b.r.Status.ResourceTree.NotHealthy = append(b.r.Status.ResourceTree.NotHealthy, appsv1alpha1.ChildResourceReport{
		Version: "v1", Kind: kind, Namespace: "ns", Name: name, Parent: parent,
		Health: appsv1alpha1.ResourceHealthReport{Status: health, Message: message}})
	return b
}

func (b *reportBuilder) obj() appsv1alpha1.ApplicationStatusReport { return *b.r.DeepCopy() }

func available() pullmodel.AgentAvailability {
	return pullmodel.AgentAvailability{Available: true, Since: &t0}
}

func unavailable() pullmodel.AgentAvailability {
	return pullmodel.AgentAvailability{Since: &t2, Reason: "Available is Unknown (ManagedClusterLeaseUpdateStopped)"}
}
