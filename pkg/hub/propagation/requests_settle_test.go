package propagation

import (
	"context"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/canonicaljson"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// A sync that succeeded and stays OutOfSync is cleared from the hub once the grace is
// over; a clear the API server refuses then is retried at once, not after a new grace.
func TestSettleRequestsRetriesAClearAfterTheGrace(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := argov1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := workv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	op := argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}}
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	app := builders.Application("guestbook").Pulled().Cluster("cluster1").Operation(op).
		Sync(argov1alpha1.SyncStatusCodeOutOfSync, "r1").
		OperationState(argov1alpha1.OperationState{Operation: op, Phase: synccommon.OperationSucceeded, StartedAt: metav1.NewTime(t0)}).Build()
	refuseNextPatch := false
	patches := 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(app).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if refuseNextPatch {
				refuseNextPatch = false
				return apierrors.NewConflict(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, obj.GetName(), nil)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()

	now := t0.Add(time.Minute)
	r := &reconciler{client: c, recorder: record.NewFakeRecorder(10), now: func() metav1.Time { return metav1.NewTime(now) },
		requests: requests.NewHub(10 * time.Second)}
	current := func() *storedApplication {
		t.Helper()
		u := newApplicationObject()
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), u); err != nil {
			t.Fatal(err)
		}
		in := &storedApplication{}
		if err := in.set(u); err != nil {
			t.Fatal(err)
		}
		return in
	}

	// The work carries the request and the spoke acknowledged it.
	in := current()
	operation, err := canonicaljson.Marshal(in.stored.Object["operation"])
	if err != nil {
		t.Fatal(err)
	}
	work, err := BuildManifestWork(in.stored, requests.Carried{Operation: &requests.OperationRequest{ID: "req-1", Operation: operation}})
	if err != nil {
		t.Fatal(err)
	}
	work.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application",
			Resource: "applications", Namespace: app.Namespace, Name: app.Name},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: pullmodel.FeedbackOperationDelivered,
			Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("req-1")}}}},
	}}
	works := []workv1.ManifestWork{*work}

	if err := r.settleRequests(ctx, in, works); err != nil {
		t.Fatal(err)
	}
	if _, held := in.stored.Object["operation"]; !held || patches != 0 {
		t.Fatalf("Succeeded and OutOfSync: operation held %t after %d patches; want held, no patch", held, patches)
	}
	if in.requests.Operation == nil || in.requests.Operation.ID != "req-1" {
		t.Fatalf("the work carries %+v, want request req-1 still", in.requests.Operation)
	}

	now = now.Add(10 * time.Second)
	refuseNextPatch = true
	if err := r.settleRequests(ctx, current(), works); !apierrors.IsConflict(err) {
		t.Fatalf("the clear at the end of the grace: %v, want the conflict", err)
	}

	now = now.Add(time.Second)
	in = current()
	if err := r.settleRequests(ctx, in, works); err != nil {
		t.Fatal(err)
	}
	if _, held := in.stored.Object["operation"]; held {
		t.Errorf("the retry a second later kept the operation: a new grace started; want it cleared (%d patches)", patches)
	}
	if patches != 2 {
		t.Errorf("%d patches, want the refused clear and its retry", patches)
	}
}
