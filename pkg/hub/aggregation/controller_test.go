package aggregation

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{argov1alpha1.AddToScheme, workv1.Install, appsv1alpha1.AddToScheme, addonv1alpha1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// writeCounting counts the writes that pass through the fake client.
func writeCounting(n *atomic.Int32) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.Add(1)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	}
}

func newFakeClient(t *testing.T, writes *atomic.Int32, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(testScheme(t)).
		WithIndex(&workv1.ManifestWork{}, applicationSetIndex, indexWorkApplicationSet).
		WithIndex(&appsv1alpha1.ApplicationStatusReport{}, applicationSetIndex, indexReportApplicationSet).
		WithIndex(&argov1alpha1.Application{}, applicationSetIndex, indexApplicationApplicationSet).
		WithObjects(objs...).
		WithInterceptorFuncs(writeCounting(writes)).
		Build()
}

func TestReconcileWritesOnlyOnChange(t *testing.T) {
	appSet := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "appset-uid"}}
	mw := newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj()
	rep := newReport("c1", "c1-guestbook").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1").obj()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: apps.AddonName}}
	var writes atomic.Int32
	c := newFakeClient(t, &writes, appSet, &mw, &rep, mca)
	r := &reconciler{client: c, limits: DefaultLimits, hubRenderedWorks: c}
	req := ctrl.Request{NamespacedName: guestbook}
	ctx := context.Background()

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := writes.Load(); got != 1 {
		t.Fatalf("%d writes creating the report, want 1", got)
	}
	report := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := c.Get(ctx, guestbook, report); err != nil {
		t.Fatal(err)
	}
	if len(report.OwnerReferences) != 1 || report.OwnerReferences[0].UID != "appset-uid" || report.Statuses.Summary.Clusters != "1" {
		t.Errorf("report = %+v", report)
	}

	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes.Load(); got != 1 {
		t.Errorf("%d writes after reconciling unchanged input, want 1", got)
	}

	// Someone else's label on the report is kept and causes no write.
	report.Labels["example.com/team"] = "a"
	if err := c.Update(ctx, report); err != nil {
		t.Fatal(err)
	}
	writes.Store(0)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := writes.Load(); got != 0 {
		t.Errorf("%d writes after a foreign label, want 0", got)
	}

	// The ApplicationSet goes: so does the report, once.
	if err := c.Delete(ctx, appSet); err != nil {
		t.Fatal(err)
	}
	writes.Store(0)
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, guestbook, &appsv1alpha1.MulticlusterApplicationSetReport{}); !apierrors.IsNotFound(err) {
		t.Errorf("report still there after its ApplicationSet was deleted: %v", err)
	}
	if got := writes.Load(); got != 1 {
		t.Errorf("%d writes deleting the report, want 1", got)
	}
}

func TestReconcileWithoutPulledApplicationsCreatesNoReport(t *testing.T) {
	appSet := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "appset-uid"}}
	var writes atomic.Int32
	c := newFakeClient(t, &writes, appSet)
	if _, err := (&reconciler{client: c, limits: DefaultLimits, hubRenderedWorks: c}).Reconcile(context.Background(), ctrl.Request{NamespacedName: guestbook}); err != nil {
		t.Fatal(err)
	}
	if got := writes.Load(); got != 0 {
		t.Errorf("%d writes, want none", got)
	}
}

func TestMappings(t *testing.T) {
	mw := newWork("c1", "c1-guestbook").obj()
	if got := mapWorkToApplicationSet(context.Background(), &mw); len(got) != 1 || got[0].NamespacedName != guestbook {
		t.Errorf("ManifestWork maps to %v, want %v", got, guestbook)
	}
	standalone := newWork("c1", "standalone").obj()
	delete(standalone.Annotations, apps.AnnotationHostingApplicationSet)
	if got := mapWorkToApplicationSet(context.Background(), &standalone); len(got) != 0 {
		t.Errorf("standalone ManifestWork maps to %v, want nothing", got)
	}
	rep := newReport("c1", "c1-guestbook").obj()
	// The label may be a hash; the typed source is what counts.
	rep.Labels = map[string]string{apps.LabelReportApplicationSet: "something-else-0123456789abcdef"}
	if got := mapReportToApplicationSet(context.Background(), &rep); len(got) != 1 || got[0].NamespacedName != guestbook {
		t.Errorf("report maps to %v, want %v", got, guestbook)
	}
	for _, bad := range []string{"", "noslash", "/name", "ns/", "a/b/c"} {
		if _, ok := pullmodel.ParseApplicationSet(bad); ok {
			t.Errorf("pullmodel.ParseApplicationSet(%q) accepted", bad)
		}
	}
}

// laggingCache serves, for the report, the copy it holds when it holds one: a cache that
// has not seen the controller's latest write yet.
type laggingCache struct {
	client.Client
	stale *appsv1alpha1.MulticlusterApplicationSetReport
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r, ok := obj.(*appsv1alpha1.MulticlusterApplicationSetReport); ok && c.stale != nil {
		c.stale.DeepCopyInto(r)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func TestReconcileBuildsOnItsOwnWriteWhileTheCacheLags(t *testing.T) {
	appSet := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "appset-uid"}}
	mw := newWork("c1", "c1-guestbook").feedback("Progressing", "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: apps.AddonName}}
	var writes atomic.Int32
	// The fake client refuses an update whose resourceVersion is not the stored one, as
	// the API server does.
	api := newFakeClient(t, &writes, appSet, &mw, mca)
	cache := &laggingCache{Client: api}
	r := &reconciler{client: cache, limits: DefaultLimits, hubRenderedWorks: cache}
	req := ctrl.Request{NamespacedName: guestbook}
	ctx := context.Background()
	setHealth := func(health string) {
		t.Helper()
		current := &workv1.ManifestWork{}
		if err := api.Get(ctx, client.ObjectKeyFromObject(&mw), current); err != nil {
			t.Fatal(err)
		}
		current.Status = newWork("c1", "c1-guestbook").feedback(health, "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj().Status
		// The fake client has no status subresource for ManifestWorks: a plain update.
		if err := api.Update(ctx, current); err != nil {
			t.Fatal(err)
		}
	}
	reportHealthy := func() string {
		t.Helper()
		stored := &appsv1alpha1.MulticlusterApplicationSetReport{}
		if err := api.Get(ctx, guestbook, stored); err != nil {
			t.Fatal(err)
		}
		return stored.Statuses.Summary.Healthy
	}

	if _, err := r.Reconcile(ctx, req); err != nil { // creates the report
		t.Fatal(err)
	}
	created := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := api.Get(ctx, guestbook, created); err != nil {
		t.Fatal(err)
	}
	setHealth("Healthy")
	if _, err := r.Reconcile(ctx, req); err != nil { // updates it; the cache keeps the created copy
		t.Fatal(err)
	}
	// reconcileLagging changes the cluster's health and expects exactly one write that
	// shows it, although the cache still serves the report as created.
	reconcileLagging := func(health, wantHealthy, lag string) {
		t.Helper()
		setHealth(health)
		writes.Store(0)
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("reconciling while the cache lags %s: %v", lag, err)
		}
		if got := reportHealthy(); got != wantHealthy || writes.Load() != 1 {
			t.Errorf("cache lagging %s: healthy %s after %d writes, want %s after 1", lag, got, writes.Load(), wantHealthy)
		}
	}
	cache.stale = created
	reconcileLagging("Degraded", "0", "the controller's own update")
	// Under load the cache can lag several writes.
	reconcileLagging("Healthy", "1", "two of the controller's updates")

	// Someone else's write moves the resourceVersion: the cache's copy is used again.
	cache.stale = nil
	stored := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := api.Get(ctx, guestbook, stored); err != nil {
		t.Fatal(err)
	}
	stored.Labels["example.com/team"] = "a"
	if err := api.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	setHealth("Healthy")
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := api.Get(ctx, guestbook, stored); err != nil {
		t.Fatal(err)
	}
	if stored.Labels["example.com/team"] != "a" || stored.Statuses.Summary.Healthy != "1" {
		t.Errorf("report after another writer's label: labels %v, healthy %s", stored.Labels, stored.Statuses.Summary.Healthy)
	}
}
