package appstatus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

const argoNamespace = "argocd"

var seq atomic.Int32

// newCluster creates a fresh cluster namespace: envtest runs no namespace controller, so
// every test gets its own instead of deleting and reusing one.
func newCluster(ctx context.Context) string {
	GinkgoHelper()
	name := fmt.Sprintf("cluster%d", seq.Add(1))
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

var _ = BeforeEach(func(ctx context.Context) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNamespace}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, ns))).To(Succeed())
})

// appSetUID is the UID in the owner reference of Applications an ApplicationSet rendered.
// No ApplicationSet exists here, so any UID does.
const appSetUID = "5d1c3c59-6f3e-4a4e-9c55-0c3d8f6f2a11"

// createApplication creates app on the hub and returns it as created.
func createApplication(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.Application {
	GinkgoHelper()
	Expect(k8s.Create(ctx, app)).To(Succeed())
	return app
}

// newManifestWork builds the ManifestWork propagation creates for app in its cluster namespace.
func newManifestWork(app *argov1alpha1.Application, cluster string) *workv1.ManifestWork {
	GinkgoHelper()
	payload, err := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name": app.Name, "namespace": argoNamespace,
			"annotations": map[string]string{
				apps.AnnotationHubApplicationNamespace: app.Namespace,
				apps.AnnotationHubApplicationName:      app.Name,
			},
		},
		"spec": app.Spec,
	})
	Expect(err).NotTo(HaveOccurred())
	paths := []workv1.JsonPath{
		{Name: pullmodel.FeedbackHealthStatus, Path: ".status.health.status"},
		{Name: pullmodel.FeedbackSyncStatus, Path: ".status.sync.status"},
		{Name: pullmodel.FeedbackOperationStatePhase, Path: ".status.operationState.phase"},
		{Name: pullmodel.FeedbackOperationStateStartedAt, Path: ".status.operationState.startedAt"},
		{Name: pullmodel.FeedbackSyncRevision, Path: ".status.sync.revision"},
	}
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s", app.Name, string(app.UID)[:5]),
			Namespace: cluster,
			Labels:    map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: app.Namespace,
				apps.AnnotationHubApplicationName:      app.Name,
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: payload}}}},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Name: app.Name, Namespace: argoNamespace},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}},
			}},
		},
	}
	if len(app.OwnerReferences) > 0 {
		mw.Labels["apps.open-cluster-management.io/application-set"] = "true"
		mw.Annotations["apps.open-cluster-management.io/hosting-applicationset"] = app.Namespace + "/" + app.OwnerReferences[0].Name
	}
	return mw
}

func createManifestWork(ctx context.Context, app *argov1alpha1.Application, cluster string) *workv1.ManifestWork {
	GinkgoHelper()
	mw := newManifestWork(app, cluster)
	Expect(k8s.Create(ctx, mw)).To(Succeed())
	return mw
}

// spoke is what the spoke Application reports; empty fields are not reported (the JSONPath
// finds nothing), as the work agent does.
type spoke struct {
	health, sync, revision, phase, startedAt string
}

func (s spoke) values() []workv1.FeedbackValue {
	var values []workv1.FeedbackValue
	for _, v := range []struct{ name, value string }{
		{pullmodel.FeedbackHealthStatus, s.health},
		{pullmodel.FeedbackSyncStatus, s.sync},
		{pullmodel.FeedbackOperationStatePhase, s.phase},
		{pullmodel.FeedbackOperationStateStartedAt, s.startedAt},
		{pullmodel.FeedbackSyncRevision, s.revision},
	} {
		if v.value != "" {
			values = append(values, workv1.FeedbackValue{Name: v.name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v.value)}})
		}
	}
	return values
}

// report writes the feedback onto the ManifestWork's status the way the work agent does,
// through the status subresource. note varies a condition message so that a write with
// identical feedback still changes the object.
func report(ctx context.Context, mw *workv1.ManifestWork, s spoke, note string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &workv1.ManifestWork{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
		cur.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
			{
				ResourceMeta: workv1.ManifestResourceMeta{
					Ordinal: 0, Group: "argoproj.io", Version: "v1alpha1", Kind: "Application",
					Resource: "applications", Name: mw.Annotations[apps.AnnotationHubApplicationName], Namespace: argoNamespace,
				},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: s.values()},
				Conditions: []metav1.Condition{{
					Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "ResourceAvailable",
					Message: "Resource is available " + note, LastTransitionTime: metav1.Now(),
				}},
			},
		}
		g.Expect(k8s.Status().Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

func getApp(ctx context.Context, g Gomega, app *argov1alpha1.Application) *argov1alpha1.Application {
	cur := &argov1alpha1.Application{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
	return cur
}

// expectMirrored waits until the hub Application's status shows what the spoke reports.
func expectMirrored(ctx context.Context, app *argov1alpha1.Application, s spoke) *argov1alpha1.Application {
	GinkgoHelper()
	var cur *argov1alpha1.Application
	Eventually(func(g Gomega) {
		cur = getApp(ctx, g, app)
		g.Expect(cur.Status.Health.Status).To(Equal(health.HealthStatusCode(s.health)))
		g.Expect(cur.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCode(s.sync)))
		g.Expect(cur.Status.Sync.Revision).To(Equal(s.revision))
		g.Expect(cur.Status.OperationState).NotTo(BeNil())
		g.Expect(cur.Status.OperationState.Phase).To(Equal(synccommon.OperationPhase(s.phase)))
		if s.startedAt != "" {
			want, err := time.Parse(time.RFC3339, s.startedAt)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cur.Status.OperationState.StartedAt.Time).To(BeTemporally("==", want))
		}
	}).Should(Succeed())
	return cur
}

var (
	synced = spoke{health: "Healthy", sync: "Synced", revision: "8f3c2b1", phase: "Succeeded", startedAt: "2026-11-01T10:00:00Z"}
)

var _ = Describe("Application status from ManifestWork feedback", func() {
	It("mirrors health, sync, revision and the operation's phase and start time of an ApplicationSet's Application", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-guestbook").Pulled().Cluster(cluster).OwnedBy("guestbook", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)

		report(ctx, mw, synced, "")
		expectMirrored(ctx, app, synced)
	})

	It("mirrors a standalone pulled Application (no ApplicationSet owner)", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application("standalone-"+cluster).Pulled().Cluster(cluster).Build())
		mw := createManifestWork(ctx, app, cluster)

		s := spoke{health: "Degraded", sync: "OutOfSync", revision: "abc", phase: "Failed", startedAt: "2026-11-02T08:30:00Z"}
		report(ctx, mw, s, "")
		expectMirrored(ctx, app, s)
	})

	It("shows the rollout Pending → Progressing → Healthy and never stays at Progressing", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-rolling").Pulled().Cluster(cluster).OwnedBy("rolling", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)

		// Before the rollout reaches this Application: out of sync after a previous sync.
		before := spoke{health: "Healthy", sync: "OutOfSync", revision: "old", phase: "Succeeded", startedAt: "2026-11-01T09:00:00Z"}
		report(ctx, mw, before, "")
		expectMirrored(ctx, app, before)

		// The ApplicationSet's sync runs on the spoke: a new operation (new startedAt) is
		// Running, health Progressing. RollingSync moves Pending → Progressing on this.
		running := spoke{health: "Progressing", sync: "Synced", revision: "new", phase: "Running", startedAt: "2026-11-01T10:00:00Z"}
		report(ctx, mw, running, "")
		expectMirrored(ctx, app, running)

		// The sync succeeds and the workload becomes Healthy: the hub shows Healthy, which
		// RollingSync needs for Progressing → Healthy.
		done := spoke{health: "Healthy", sync: "Synced", revision: "new", phase: "Succeeded", startedAt: "2026-11-01T10:00:00Z"}
		report(ctx, mw, done, "")
		cur := expectMirrored(ctx, app, done)
		Expect(isApplicationHealthy(cur)).To(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(getApp(ctx, g, app).Status.Health.Status).To(Equal(health.HealthStatusHealthy))
		}).Should(Succeed())
	})

	It("preserves status fields other writers own", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-preserve").Pulled().Cluster(cluster).Build())
		// Propagation owns its hub conditions; the Argo CD fields below nobody mirrors.
		invalid := pullmodel.HubCondition(pullmodel.ConditionInvalidSpec, "annotation apps.open-cluster-management.io/destination-server is not a URL")
		at := metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
		invalid.LastTransitionTime = &at
		summary := argov1alpha1.ApplicationSummary{Images: []string{"gcr.io/heptio-images/ks-guestbook-demo:0.2"}}
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			cur.Status.Conditions = []argov1alpha1.ApplicationCondition{invalid}
			cur.Status.SourceType = argov1alpha1.ApplicationSourceTypeDirectory
			cur.Status.Summary = summary
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		mw := createManifestWork(ctx, app, cluster)

		report(ctx, mw, synced, "")
		cur := expectMirrored(ctx, app, synced)
		Expect(cur.Status.Conditions).To(HaveExactElements(HaveField("Message", invalid.Message)))
		Expect(cur.Status.SourceType).To(Equal(argov1alpha1.ApplicationSourceTypeDirectory))
		Expect(cur.Status.Summary).To(Equal(summary))
		Expect(cur.Spec).To(Equal(app.Spec))

		changed := synced
		changed.health, changed.revision = "Degraded", "9a8b7c6"
		report(ctx, mw, changed, "")
		cur = expectMirrored(ctx, app, changed)
		Expect(cur.Status.Conditions).To(HaveExactElements(HaveField("Message", invalid.Message)))
		Expect(cur.Status.Summary).To(Equal(summary))
	})

	It("ignores a malformed start time and mirrors the other values", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-malformed").Pulled().Cluster(cluster).Build())
		mw := createManifestWork(ctx, app, cluster)

		bad := spoke{health: "Progressing", sync: "Synced", revision: "r1", phase: "Running", startedAt: "not a time"}
		report(ctx, mw, bad, "")
		bad.startedAt = ""
		cur := expectMirrored(ctx, app, bad)
		Expect(cur.Status.OperationState.StartedAt.IsZero()).To(BeFalse(), "the CRD requires a start time with the phase")

		good := spoke{health: "Healthy", sync: "Synced", revision: "r1", phase: "Succeeded", startedAt: "2026-11-03T07:00:00Z"}
		report(ctx, mw, good, "")
		expectMirrored(ctx, app, good)
	})

	It("follows the Application to its new cluster's ManifestWork", func(ctx context.Context) {
		oldCluster, newClusterNs := newCluster(ctx), newCluster(ctx)
		app := createApplication(ctx, builders.Application(oldCluster+"-moving").Pulled().Cluster(oldCluster).Build())
		report(ctx, createManifestWork(ctx, app, oldCluster), synced, "")
		expectMirrored(ctx, app, synced)

		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			cur.Annotations[apps.AnnotationOCMManagedCluster] = newClusterNs
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		moved := spoke{health: "Missing", sync: "OutOfSync", revision: "8f3c2b1", phase: "Running", startedAt: "2026-11-04T00:00:00Z"}
		report(ctx, createManifestWork(ctx, app, newClusterNs), moved, "")
		expectMirrored(ctx, app, moved)
	})

	It("ignores feedback of a ManifestWork without the pull label", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-unlabelled").Pulled().Cluster(cluster).Build())
		mw := newManifestWork(app, cluster)
		delete(mw.Labels, apps.LabelPullToOCMManagedCluster)
		Expect(k8s.Create(ctx, mw)).To(Succeed())

		report(ctx, mw, synced, "")
		Consistently(func(g Gomega) {
			g.Expect(getApp(ctx, g, app).Status.OperationState).To(BeNil())
		}).Should(Succeed())
		Expect(writes.Of("applications", app.Name)).To(BeZero())
	})

	It("writes once per change and never for repeated identical feedback", func(ctx context.Context) {
		cluster := newCluster(ctx)
		app := createApplication(ctx, builders.Application(cluster+"-count").Pulled().Cluster(cluster).OwnedBy("count", appSetUID).Build())
		mw := createManifestWork(ctx, app, cluster)
		Expect(writes.Of("applications", app.Name)).To(BeZero())

		report(ctx, mw, synced, "")
		expectMirrored(ctx, app, synced)
		Eventually(func() int { return writes.Of("applications", app.Name) }).Should(Equal(1))
		var resourceVersion string
		Eventually(func(g Gomega) { resourceVersion = getApp(ctx, g, app).ResourceVersion }).Should(Succeed())

		// The work agent rewrites the status with the same feedback (only a condition
		// message differs), someone touches an unrelated ManifestWork annotation, and the
		// hub Application itself changes in a way that reaches the reconciler.
		for i := range 5 {
			report(ctx, mw, synced, fmt.Sprintf("(resync %d)", i))
		}
		Eventually(func(g Gomega) {
			cur := &workv1.ManifestWork{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mw), cur)).To(Succeed())
			cur.Annotations["example.com/touched"] = "yes"
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := getApp(ctx, g, app)
			cur.Annotations["example.com/touched"] = "yes"
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
			resourceVersion = cur.ResourceVersion
		}).Should(Succeed())

		// Give the controller time to process every event, then prove it wrote nothing.
		Consistently(func() int { return writes.Of("applications", app.Name) }, 5*time.Second).Should(Equal(1))
		Expect(getApp(ctx, Default, app).ResourceVersion).To(Equal(resourceVersion), "the Application was written")

		// A real change is exactly one more write.
		changed := synced
		changed.health = "Progressing"
		report(ctx, mw, changed, "")
		expectMirrored(ctx, app, changed)
		Consistently(func() int { return writes.Of("applications", app.Name) }).Should(Equal(2))
	})
})

// isApplicationHealthy is the check the ApplicationSet controller's RollingSync uses to move
// an Application from Progressing to Healthy (argo-cd v2.14
// applicationset/controllers/applicationset_controller.go, isApplicationHealthy).
func isApplicationHealthy(app *argov1alpha1.Application) bool {
	phase := ""
	if app.Status.OperationState != nil {
		phase = string(app.Status.OperationState.Phase)
	}
	return app.Status.Health.Status == health.HealthStatusHealthy &&
		app.Status.Sync.Status != argov1alpha1.SyncStatusCodeOutOfSync &&
		(phase == string(synccommon.OperationSucceeded) || phase == "")
}
