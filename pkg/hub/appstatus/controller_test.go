package appstatus

import (
	"context"
	"testing"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// hubApplication is a pulled hub Application whose ManifestWork is "<name>-7c0e3".
func hubApplication(name string) *builders.ApplicationBuilder {
	return builders.Application(name).Pulled().UID("7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e")
}

// work is a fixture builder for pull-model ManifestWorks.
type work struct{ w *workv1.ManifestWork }

func newWork(name, cluster, appName string) *work {
	return &work{w: &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: cluster,
		Labels: map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
		Annotations: map[string]string{
			apps.AnnotationHubApplicationNamespace: "argocd",
			apps.AnnotationHubApplicationName:      appName,
		},
	}}}
}

func (b *work) feedback(values ...workv1.FeedbackValue) *work {
	b.w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Resource: "applications", Name: b.w.Annotations[apps.AnnotationHubApplicationName], Namespace: "argocd"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}}
	return b
}

// condition sets a condition of the work itself, as the work agent does.
func (b *work) condition(t string, status metav1.ConditionStatus, message string, at metav1.Time) *work {
	meta.SetStatusCondition(&b.w.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: t, Message: message, LastTransitionTime: at})
	return b
}

// manifestCondition sets a condition of the Application manifest (call feedback first).
func (b *work) manifestCondition(t string, status metav1.ConditionStatus, message string) *work {
	m := &b.w.Status.ResourceStatus.Manifests[0]
	meta.SetStatusCondition(&m.Conditions, metav1.Condition{Type: t, Status: status, Reason: t, Message: message, LastTransitionTime: started})
	return b
}

// delivers sets the manifest config propagation writes: the Application's namespace and
// name on the cluster.
func (b *work) delivers(namespace, name string) *work {
	b.w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "argoproj.io", Resource: "applications", Namespace: namespace, Name: name},
	}}
	return b
}

func (b *work) created(t time.Time) *work {
	b.w.CreationTimestamp = metav1.NewTime(t)
	return b
}

func (b *work) deleting() *work {
	now := metav1.Now()
	b.w.DeletionTimestamp = &now
	b.w.Finalizers = []string{"cluster.open-cluster-management.io/manifest-work-cleanup"}
	return b
}

func (b *work) obj() *workv1.ManifestWork { return b.w.DeepCopy() }

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := argov1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := workv1.Install(s); err != nil {
		t.Fatal(err)
	}
	if err := appsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := addonv1alpha1.Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newFakeClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(testScheme(t)).
		WithIndex(&workv1.ManifestWork{}, pullmodel.HubApplicationIndex, func(o client.Object) []string {
			if key, ok := pullmodel.HubApplication(o); ok {
				return []string{key.String()}
			}
			return nil
		}).
		WithIndex(&appsv1alpha1.ApplicationStatusReport{}, reportHubApplicationIndex, pullmodel.IndexSourceHubApplication).
		WithStatusSubresource(&workv1.ManifestWork{}).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
}

func TestReconcile(t *testing.T) {
	feedback := []workv1.FeedbackValue{
		str(pullmodel.FeedbackHealthStatus, "Healthy"),
		str(pullmodel.FeedbackSyncStatus, "Synced"),
		str(pullmodel.FeedbackSyncRevision, "8f3c2b1"),
		str(pullmodel.FeedbackOperationStatePhase, "Succeeded"),
		str(pullmodel.FeedbackOperationStateStartedAt, "2026-11-01T10:00:00Z"),
	}
	mirrored := func(app *argov1alpha1.Application) bool {
		return app.Status.Health.Status == health.HealthStatusHealthy &&
			app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced &&
			app.Status.Sync.Revision == "8f3c2b1" &&
			app.Status.OperationState != nil &&
			app.Status.OperationState.Phase == synccommon.OperationSucceeded &&
			app.Status.OperationState.StartedAt.Equal(&started)
	}
	tests := map[string]struct {
		app          *argov1alpha1.Application
		works        []client.Object
		wantMirrored bool
		wantPatches  int
	}{
		"mirrors the feedback": {
			app:          hubApplication("guestbook").Cluster("c1").Build(),
			works:        []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").feedback(feedback...).obj()},
			wantMirrored: true, wantPatches: 1,
		},
		"no write when already mirrored": {
			app: func() *argov1alpha1.Application {
				a := hubApplication("guestbook").Cluster("c1").Build()
				fb, _ := pullmodel.ScalarsFromFeedback(feedback)
				mirrorScalars(&a.Status, fb, now)
				return a
			}(),
			works:        []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").feedback(feedback...).obj()},
			wantMirrored: true,
		},
		"no ManifestWork yet": {
			app: hubApplication("guestbook").Cluster("c1").Build(),
		},
		"ManifestWork without status yet": {
			app:   hubApplication("guestbook").Cluster("c1").Build(),
			works: []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").obj()},
		},
		"not a pulled Application": {
			app: func() *argov1alpha1.Application {
				a := hubApplication("guestbook").Cluster("c1").Build()
				a.Labels[apps.LabelPullToOCMManagedCluster] = "false"
				return a
			}(),
			works: []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").feedback(feedback...).obj()},
		},
		// Propagation keeps the last good ManifestWork while the target is invalid: what
		// runs on c1 still shows on the hub.
		"no target cluster: the kept ManifestWork still speaks": {
			app:          hubApplication("guestbook").Build(),
			works:        []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").feedback(feedback...).obj()},
			wantMirrored: true, wantPatches: 1,
		},
		"retargeted to a cluster with no ManifestWork yet: the kept one on the old cluster still speaks": {
			app:          hubApplication("guestbook").Cluster("c2").Build(),
			works:        []client.Object{newWork("guestbook-7c0e3", "c1", "guestbook").feedback(feedback...).obj()},
			wantMirrored: true, wantPatches: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			patches := 0
			funcs := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				patches++
				return c.Patch(ctx, obj, patch, opts...)
			}}
			c := newFakeClient(t, funcs, append(tc.works, tc.app)...)
			r := &reconciler{client: c, apiReader: c, now: func() metav1.Time { return now }}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.app)}); err != nil {
				t.Fatal(err)
			}
			got := &argov1alpha1.Application{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.app), got); err != nil {
				t.Fatal(err)
			}
			if m := mirrored(got); m != tc.wantMirrored {
				t.Errorf("mirrored = %v, want %v; status: %+v", m, tc.wantMirrored, got.Status)
			}
			if patches != tc.wantPatches {
				t.Errorf("patches = %d, want %d", patches, tc.wantPatches)
			}
		})
	}

	t.Run("missing Application", func(t *testing.T) {
		c := newFakeClient(t, interceptor.Funcs{})
		if _, err := (&reconciler{client: c, apiReader: c, now: metav1.Now}).Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "argocd", Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReconcileConflict: when someone else writes the Application between the read and the
// write, the write conflicts; the status is recomputed on a fresh read, and the other
// writer's change survives.
func TestReconcileConflict(t *testing.T) {
	app := hubApplication("guestbook").Cluster("c1").Build()
	mw := newWork("guestbook-7c0e3", "c1", "guestbook").feedback(str(pullmodel.FeedbackHealthStatus, "Healthy")).obj()
	patches := 0
	funcs := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		patches++
		if patches == 1 {
			// Another writer gets there first.
			other := &argov1alpha1.Application{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			other.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}}
			if err := c.Update(ctx, other); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	c := newFakeClient(t, funcs, app, mw)
	gets := 0
	reader := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		gets++
		return c.Get(ctx, key, obj, opts...)
	}})
	r := &reconciler{client: c, apiReader: reader, now: metav1.Now}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}); err != nil {
		t.Fatal(err)
	}
	if patches != 2 || gets != 1 {
		t.Errorf("patches = %d, fresh reads = %d; want 2 and 1", patches, gets)
	}
	got := &argov1alpha1.Application{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(app), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Health.Status != health.HealthStatusHealthy || got.Operation == nil {
		t.Errorf("status = %+v, operation %+v; want health Healthy and the other writer's operation", got.Status, got.Operation)
	}
}

func TestFeedbackChangedPredicate(t *testing.T) {
	appliedAt := metav1.NewTime(started.Add(time.Minute))
	base := newWork("guestbook-7c0e3", "c1", "guestbook").feedback(str(pullmodel.FeedbackHealthStatus, "Healthy")).
		condition(workv1.WorkApplied, metav1.ConditionTrue, "Apply manifest work complete", started).obj()
	touched := base.DeepCopy()
	touched.Annotations["example.com/touched"] = "yes"
	touched.Status.Conditions[0].Message = "Apply manifest work complete (again)"
	touched.Status.Conditions = append(touched.Status.Conditions, metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Message: "All resources are available"})
	reapplied := base.DeepCopy()
	reapplied.Status.Conditions[0].LastTransitionTime = appliedAt
	failedApply := newWork("guestbook-7c0e3", "c1", "guestbook").feedback(str(pullmodel.FeedbackHealthStatus, "Healthy")).
		condition(workv1.WorkApplied, metav1.ConditionFalse, "Failed to apply manifest work", started).obj()
	changed := newWork("guestbook-7c0e3", "c1", "guestbook").feedback(str(pullmodel.FeedbackHealthStatus, "Progressing")).obj()
	otherManifest := base.DeepCopy()
	otherManifest.Status.ResourceStatus.Manifests = append(otherManifest.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Kind: "ConfigMap", Resource: "configmaps", Name: "x"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{str("data", "1")}},
	})
	retargeted := base.DeepCopy()
	retargeted.Annotations[apps.AnnotationHubApplicationName] = "other"

	tests := map[string]struct {
		old, new client.Object
		want     bool
	}{
		"identical feedback, other changes":   {old: base, new: touched, want: false},
		"applied again later":                 {old: base, new: reapplied, want: true},
		"no longer applied":                   {old: base, new: failedApply, want: true},
		"feedback changed":                    {old: base, new: changed, want: true},
		"another manifest's feedback changed": {old: base, new: otherManifest, want: false},
		"hub annotations changed":             {old: base, new: retargeted, want: true},
		"not ManifestWorks":                   {old: hubApplication("a").Build(), new: hubApplication("a").Build(), want: false},
	}
	p := workChanged()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMapWorkToApplication(t *testing.T) {
	tests := map[string]struct {
		mw   *workv1.ManifestWork
		want []types.NamespacedName
	}{
		"pull-model ManifestWork": {
			mw:   newWork("guestbook-7c0e3", "c1", "guestbook").obj(),
			want: []types.NamespacedName{{Namespace: "argocd", Name: "guestbook"}},
		},
		"no pull label": {
			mw: func() *workv1.ManifestWork {
				w := newWork("guestbook-7c0e3", "c1", "guestbook").obj()
				w.Labels = nil
				return w
			}(),
		},
		"no hub annotations": {
			mw: func() *workv1.ManifestWork {
				w := newWork("guestbook-7c0e3", "c1", "guestbook").obj()
				w.Annotations = nil
				return w
			}(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []types.NamespacedName
			for _, req := range mapWorkToApplication(context.Background(), tc.mw) {
				got = append(got, req.NamespacedName)
			}
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("requests = %v, want %v", got, tc.want)
			}
		})
	}
}

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
}
