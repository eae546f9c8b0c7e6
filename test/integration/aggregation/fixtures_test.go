package aggregation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

const argoNamespace = "argocd"

var seq atomic.Int32

// newCluster creates a fresh cluster namespace (envtest runs no namespace controller, so
// none is reused) with an argocd-pull ManagedClusterAddOn whose agent is available.
func newCluster(ctx context.Context) string {
	GinkgoHelper()
	name := fmt.Sprintf("cluster%d", seq.Add(1))
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: apps.AddonName}}
	Expect(k8s.Create(ctx, mca)).To(Succeed())
	setAgentAvailable(ctx, name, metav1.ConditionTrue, metav1.Now())
	return name
}

// setAgentAvailable sets the Available condition of the cluster's addon, as OCM does from
// the agent's lease.
func setAgentAvailable(ctx context.Context, cluster string, status metav1.ConditionStatus, since metav1.Time) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		reason := "ManagedClusterAddOnLeaseUpdated"
		if status != metav1.ConditionTrue {
			reason = "ManagedClusterAddOnLeaseUpdateStopped"
		}
		mca.Status.Conditions = []metav1.Condition{{
			Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: status, Reason: reason,
			Message: "lease", LastTransitionTime: since,
		}}
		g.Expect(k8s.Status().Update(ctx, mca)).To(Succeed())
	}).Should(Succeed())
}

var _ = BeforeEach(func(ctx context.Context) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, ns))).To(Succeed())
})

func createApplicationSet(ctx context.Context, name string) *argov1alpha1.ApplicationSet {
	GinkgoHelper()
	appSet := &argov1alpha1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNamespace},
		Spec: argov1alpha1.ApplicationSetSpec{
			Generators: []argov1alpha1.ApplicationSetGenerator{{List: &argov1alpha1.ListGenerator{Elements: []apiextensionsv1.JSON{}}}},
			Template: argov1alpha1.ApplicationSetTemplate{
				ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{Name: "{{name}}-" + name},
				Spec: argov1alpha1.ApplicationSpec{
					Project:     "default",
					Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"},
					Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://github.com/argoproj/argocd-example-apps", Path: "guestbook"},
				},
			},
		},
	}
	Expect(k8s.Create(ctx, appSet)).To(Succeed())
	return appSet
}

// createApplication creates a pulled hub Application for cluster, owned by appSet when
// appSet is not nil.
func createApplication(ctx context.Context, name, cluster string, appSet *argov1alpha1.ApplicationSet) *argov1alpha1.Application {
	GinkgoHelper()
	b := builders.Application(name).Pulled().Cluster(cluster)
	if appSet != nil {
		b.OwnedBy(appSet.Name, appSet.UID)
	}
	app := b.Build()
	Expect(k8s.Create(ctx, app)).To(Succeed())
	return app
}

// createManifestWork creates the ManifestWork propagation would create for app.
func createManifestWork(ctx context.Context, app *argov1alpha1.Application) *workv1.ManifestWork {
	GinkgoHelper()
	cluster := app.Annotations[apps.AnnotationOCMManagedCluster]
	payload, err := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app.Name, "namespace": argoNamespace},
		"spec":     app.Spec,
	})
	Expect(err).NotTo(HaveOccurred())
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s", app.Name, string(app.UID)[:5]), Namespace: cluster,
			Labels: map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: app.Namespace, apps.AnnotationHubApplicationName: app.Name,
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: payload}}}},
		},
	}
	if len(app.OwnerReferences) > 0 {
		mw.Labels[apps.LabelApplicationSet] = "true"
		mw.Annotations[apps.AnnotationHostingApplicationSet] = app.Namespace + "/" + app.OwnerReferences[0].Name
	}
	Expect(k8s.Create(ctx, mw)).To(Succeed())
	return mw
}

// spoke is what the work agent's status feedback carries; empty fields are not reported.
type spoke struct {
	health, sync, revision, phase, startedAt string
}

// setFeedback writes the feedback onto the ManifestWork's status as the work agent does;
// note varies a condition message so that identical feedback still changes the object.
func setFeedback(ctx context.Context, mw *workv1.ManifestWork, s spoke, note string) {
	GinkgoHelper()
	var values []workv1.FeedbackValue
	for _, v := range []struct{ name, value string }{
		{pullmodel.FeedbackHealthStatus, s.health}, {pullmodel.FeedbackSyncStatus, s.sync},
		{pullmodel.FeedbackSyncRevision, s.revision}, {pullmodel.FeedbackOperationStatePhase, s.phase},
		{pullmodel.FeedbackOperationStateStartedAt, s.startedAt},
	} {
		if v.value != "" {
			values = append(values, workv1.FeedbackValue{Name: v.name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v.value)}})
		}
	}
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{
				Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications",
				Name: mw.Annotations[apps.AnnotationHubApplicationName], Namespace: argoNamespace,
			},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
			Conditions: []metav1.Condition{{
				Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable",
				Message: "Resource is available " + note, LastTransitionTime: metav1.Now(),
			}},
		}}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

// newAgentReport is the report the cluster's agent writes about app.
func newAgentReport(app *argov1alpha1.Application, observedAt metav1.Time) *appsv1alpha1.ApplicationStatusReport {
	cluster := app.Annotations[apps.AnnotationOCMManagedCluster]
	rep := &appsv1alpha1.ApplicationStatusReport{
		ObjectMeta: metav1.ObjectMeta{Name: argoNamespace + "." + app.Name, Namespace: cluster},
		Source: appsv1alpha1.ApplicationReportSource{
			Cluster: cluster, Namespace: argoNamespace, Name: app.Name,
			HubApplicationNamespace: app.Namespace, HubApplicationName: app.Name,
		},
		Status: appsv1alpha1.ApplicationReportStatus{ObservedAt: observedAt},
	}
	if len(app.OwnerReferences) > 0 {
		rep.Source.ApplicationSet = app.Namespace + "/" + app.OwnerReferences[0].Name
		rep.Labels = map[string]string{apps.LabelReportApplicationSet: apps.ApplicationSetLabelValue(rep.Source.ApplicationSet)}
	}
	return rep
}

// healthyReport is a healthy, synced report with a Deployment and a Service.
func healthyReport(app *argov1alpha1.Application, observedAt metav1.Time) *appsv1alpha1.ApplicationStatusReport {
	rep := newAgentReport(app, observedAt)
	started := metav1.NewTime(observedAt.Add(-time.Minute))
	rep.Status.Health = appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy}
	rep.Status.Sync = appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "8f3c2b1"}
	rep.Status.OperationState = &appsv1alpha1.OperationStateReport{Phase: appsv1alpha1.OperationSucceeded, StartedAt: &started, Message: "successfully synced (all tasks run)"}
	rep.Status.Resources = []appsv1alpha1.ResourceStatusReport{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: appsv1alpha1.SyncStatusSynced,
			Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy}},
		{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: appsv1alpha1.SyncStatusSynced,
			Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy}},
	}
	return rep
}

// failingReport is a report of a sync that failed on the Deployment.
func failingReport(app *argov1alpha1.Application, observedAt metav1.Time) *appsv1alpha1.ApplicationStatusReport {
	rep := healthyReport(app, observedAt)
	rep.Status.Health = appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "Deployment guestbook-ui has 0/1 ready replicas"}
	rep.Status.Sync.Status = appsv1alpha1.SyncStatusOutOfSync
	rep.Status.OperationState.Phase = appsv1alpha1.OperationFailed
	rep.Status.OperationState.Message = `one or more objects failed to apply, reason: Deployment.apps "guestbook-ui" is invalid`
	rep.Status.Conditions = []appsv1alpha1.ApplicationConditionReport{{
		Type: "SyncError", Message: `Failed to sync Deployment guestbook/guestbook-ui: spec.template.spec.containers[0].image: Required value`,
	}}
	rep.Status.Resources[0].Status = appsv1alpha1.SyncStatusOutOfSync
	rep.Status.Resources[0].Health = &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1 ready"}
	return rep
}

// writeReport creates or replaces the agent's report, as the agent does.
func writeReport(ctx context.Context, rep *appsv1alpha1.ApplicationStatusReport) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &appsv1alpha1.ApplicationStatusReport{}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(rep), cur)
		if client.IgnoreNotFound(err) != nil {
			g.Expect(err).NotTo(HaveOccurred())
		}
		if err != nil {
			g.Expect(k8s.Create(ctx, rep.DeepCopy())).To(Succeed())
			return
		}
		cur.Labels, cur.Source, cur.Status = rep.Labels, rep.Source, rep.Status
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

func getReport(ctx context.Context, g Gomega, appSet *argov1alpha1.ApplicationSet) *appsv1alpha1.MulticlusterApplicationSetReport {
	report := &appsv1alpha1.MulticlusterApplicationSetReport{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(appSet), report)).To(Succeed())
	return report
}

func getApp(ctx context.Context, g Gomega, app *argov1alpha1.Application) *argov1alpha1.Application {
	cur := &argov1alpha1.Application{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
	return cur
}

// entryOf is the report's entry of app on its cluster.
func entryOf(g Gomega, report *appsv1alpha1.MulticlusterApplicationSetReport, app *argov1alpha1.Application) appsv1alpha1.ClusterCondition {
	cluster := app.Annotations[apps.AnnotationOCMManagedCluster]
	want := fmt.Sprintf("%s/%s/%s/%s-%s", argoNamespace, app.Name, cluster, app.Name, string(app.UID)[:5])
	for _, e := range report.Statuses.ClusterConditions {
		if e.App == want {
			g.Expect(e.Cluster).To(Equal(cluster))
			return e
		}
	}
	g.Expect(report.Statuses.ClusterConditions).To(ContainElement(HaveField("App", want)))
	return appsv1alpha1.ClusterCondition{}
}
