package aggregation

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/latency"

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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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

// reconcilerOn is the controller's reconcile.Reconciler, its metrics included, on c and
// hubRenderedWorks, with clock (nil: the wall clock).
func reconcilerOn(c client.Client, hubRenderedWorks client.Reader, clock func() time.Time) reconcile.Reconciler {
	r := newReconciler(c, hubRenderedWorks)
	r.reports.clock = clock
	return instrumented(r, &latency.Arrivals{})
}

func TestReconcileWritesOnlyOnChange(t *testing.T) {
	appSet := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "appset-uid"}}
	mw := newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj()
	rep := newReport("c1", "c1-guestbook").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1").obj()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: apps.AddonName}}
	var writes atomic.Int32
	c := newFakeClient(t, &writes, appSet, &mw, &rep, mca)
	// Each reconcile a minute after the last, so no write is held back by the pacing: an
	// unchanged report must be left alone because it is unchanged.
	r := reconcilerOn(c, c, steppingClock(time.Minute))
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
	if _, err := reconcilerOn(c, c, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: guestbook}); err != nil {
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
	// Each reconcile a minute after the last: no write waits for the pacing.
	r := reconcilerOn(cache, cache, steppingClock(time.Minute))
	req := ctrl.Request{NamespacedName: guestbook}
	ctx := context.Background()
	setHealth := func(health string) { t.Helper(); setWorkHealth(t, api, client.ObjectKeyFromObject(&mw), health) }
	reportHealthy := func() string { t.Helper(); return storedHealthy(t, api) }

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

// steppingClock is a clock that moves by step at every reading.
func steppingClock(step time.Duration) func() time.Time {
	now := t0.Time
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// TestReconcilePacesWritesBySize checks that after a report write the next is made only
// after its size at reportBytesPerSecond, with the reconcile queued for then, and that
// nothing is lost meanwhile.
func TestReconcilePacesWritesBySize(t *testing.T) {
	appSet := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "appset-uid"}}
	mw := newWork("c1", "c1-guestbook").feedback("Progressing", "Synced", "r1", "Running", "2026-11-01T10:00:00Z").obj()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: apps.AddonName}}
	var writes atomic.Int32
	c := newFakeClient(t, &writes, appSet, &mw, mca)
	now := t0.Time
	r := reconcilerOn(c, c, func() time.Time { return now })
	req := ctrl.Request{NamespacedName: guestbook}
	ctx := context.Background()
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := reconcile(); res.RequeueAfter != 0 || writes.Load() != 1 {
		t.Fatalf("creating the report: %d writes, requeue after %v; want 1 write, no requeue", writes.Load(), res.RequeueAfter)
	}
	report := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := c.Get(ctx, guestbook, report); err != nil {
		t.Fatal(err)
	}
	pause := time.Duration(float64(jsonSize(report.Statuses)) / reportBytesPerSecond * float64(time.Second))

	// The Application becomes healthy at once: the write waits for the pause.
	setWorkHealth(t, c, client.ObjectKeyFromObject(&mw), "Healthy")
	writes.Store(0)
	if res := reconcile(); res.RequeueAfter != pause || writes.Load() != 0 {
		t.Errorf("right after the first write: %d writes, requeue after %v; want none, requeue after %v", writes.Load(), res.RequeueAfter, pause)
	}
	now = now.Add(pause / 2)
	if res := reconcile(); res.RequeueAfter != pause-pause/2 || writes.Load() != 0 {
		t.Errorf("halfway: %d writes, requeue after %v; want none, requeue after %v", writes.Load(), res.RequeueAfter, pause-pause/2)
	}
	if h := storedHealthy(t, c); h != "0" {
		t.Errorf("healthy %s while the write waits, want the first write's 0", h)
	}
	now = now.Add(pause - pause/2)
	if res := reconcile(); res.RequeueAfter != 0 || writes.Load() != 1 {
		t.Errorf("after the pause: %d writes, requeue after %v; want 1 write, no requeue", writes.Load(), res.RequeueAfter)
	}
	if h := storedHealthy(t, c); h != "1" {
		t.Errorf("healthy %s after the pause, want 1", h)
	}
}

// TestWritePacingAddsUpAcrossReports checks that the pause follows every report written,
// whichever ApplicationSet's: two writes at once make the next wait for both.
func TestWritePacingAddsUpAcrossReports(t *testing.T) {
	var p writePacing
	now := t0.Time
	if w := p.wait(now); w != 0 {
		t.Fatalf("before any write: wait %v, want 0", w)
	}
	p.wrote(now, reportBytesPerSecond/4)
	p.wrote(now, reportBytesPerSecond/4)
	if w := p.wait(now); w != 500*time.Millisecond {
		t.Errorf("after two writes of a quarter second each: wait %v, want 500ms", w)
	}
	if w := p.wait(now.Add(400 * time.Millisecond)); w != 100*time.Millisecond {
		t.Errorf("400ms later: wait %v, want 100ms", w)
	}
	// A write long after the last starts from its own time, not from the old turn.
	later := now.Add(time.Minute)
	p.wrote(later, reportBytesPerSecond/8)
	if w := p.wait(later); w != 125*time.Millisecond {
		t.Errorf("after a write a minute later: wait %v, want 125ms", w)
	}
}

// setWorkHealth gives the ManifestWork key of the hub Application c1-guestbook the
// feedback of a synced Application with health.
func setWorkHealth(t *testing.T, c client.Client, key client.ObjectKey, health string) {
	t.Helper()
	ctx := context.Background()
	current := &workv1.ManifestWork{}
	if err := c.Get(ctx, key, current); err != nil {
		t.Fatal(err)
	}
	current.Status = newWork("c1", "c1-guestbook").feedback(health, "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj().Status
	// The fake client has no status subresource for ManifestWorks: a plain update.
	if err := c.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
}

// storedHealthy is the healthy count of the stored report of guestbook.
func storedHealthy(t *testing.T, c client.Client) string {
	t.Helper()
	stored := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := c.Get(context.Background(), guestbook, stored); err != nil {
		t.Fatal(err)
	}
	return stored.Statuses.Summary.Healthy
}
