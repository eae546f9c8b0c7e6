package manager

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// mirroredApplication is a pulled hub Application after the application status controller
// mirrored a synced, healthy cluster onto it, with n resources.
func mirroredApplication(name string, n int) *argov1alpha1.Application {
	started := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	finished := metav1.NewTime(started.Add(2 * time.Second))
	b := builders.Application(name).Pulled().Cluster("cluster1").
		Operation(argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}}).
		Sync(argov1alpha1.SyncStatusCodeSynced, "8f3c2b1").Health(health.HealthStatusHealthy, "").
		Condition(argov1alpha1.ApplicationCondition{Type: "InvalidSpecError", Message: "argocd-pull: example"})
	result := &argov1alpha1.SyncOperationResult{Revision: "8f3c2b1"}
	for i := range n {
		r := argov1alpha1.ResourceStatus{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook",
			Name: fmt.Sprintf("guestbook-ui-%d", i), Status: argov1alpha1.SyncStatusCodeSynced,
			Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}}
		b.Resource(r)
		result.Resources = append(result.Resources, &argov1alpha1.ResourceResult{Group: r.Group, Version: r.Version, Kind: r.Kind,
			Namespace: r.Namespace, Name: r.Name, Status: synccommon.ResultCodeSynced, Message: "deployment.apps/" + r.Name + " configured",
			HookPhase: synccommon.OperationRunning, SyncPhase: synccommon.SyncPhaseSync})
	}
	b.OperationState(argov1alpha1.OperationState{Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "8f3c2b1"}},
		Phase: synccommon.OperationSucceeded, Message: "successfully synced (all tasks run)", SyncResult: result,
		StartedAt: started, FinishedAt: &finished})
	app := b.Build()
	app.APIVersion, app.Kind = applicationGVK.GroupVersion().String(), applicationGVK.Kind
	return app
}

func storedForm(t testing.TB, app *argov1alpha1.Application) *unstructured.Unstructured {
	t.Helper()
	raw, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	u := storedApplication()
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTrimStoredApplicationKeepsWhatPropagationReads(t *testing.T) {
	app := mirroredApplication("guestbook", 3)
	u := storedForm(t, app)
	spec, operation, metadata := u.Object["spec"], u.Object["operation"], u.Object["metadata"]
	out, err := trimStoredApplication(u)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*unstructured.Unstructured)
	for field, want := range map[string]any{"spec": spec, "operation": operation, "metadata": metadata} {
		if diff := cmp.Diff(want, trimmed.Object[field]); diff != "" {
			t.Errorf("%s changed (-want +got):\n%s", field, diff)
		}
	}
	st := typedView(t, trimmed).Status
	if diff := cmp.Diff(app.Status.Conditions, st.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if st.OperationState == nil || st.OperationState.Phase != synccommon.OperationSucceeded ||
		!st.OperationState.StartedAt.Equal(&app.Status.OperationState.StartedAt) {
		t.Errorf("operation state %+v, want its phase and start kept", st.OperationState)
	}
	if st.Sync.Status != argov1alpha1.SyncStatusCodeSynced {
		t.Errorf("sync status %q, want Synced kept while the hub holds an .operation", st.Sync.Status)
	}
	if len(st.Resources) != 0 || st.Sync.Revision != "" || st.Health.Status != "" || st.OperationState.SyncResult != nil {
		t.Errorf("status %+v: want only conditions, the operation's phase and start and the sync status", st)
	}

	t.Run("no .operation held: no sync status", func(t *testing.T) {
		app := mirroredApplication("guestbook", 3)
		app.Operation = nil
		out, err := trimStoredApplication(storedForm(t, app))
		if err != nil {
			t.Fatal(err)
		}
		status := out.(*unstructured.Unstructured).Object["status"].(map[string]any)
		if _, ok := status["sync"]; ok {
			t.Errorf("sync %v kept without an .operation", status["sync"])
		}
		if _, ok := status["operationState"]; !ok {
			t.Error("operation state dropped")
		}
	})

	t.Run("other objects pass unchanged", func(t *testing.T) {
		for _, obj := range []any{app, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "status": map[string]any{"x": "y"}}}} {
			got, err := trimStoredApplication(obj)
			if err != nil || got != obj {
				t.Errorf("%T changed or failed: %v", obj, err)
			}
		}
		if app.Status.Resources == nil {
			t.Error("a typed Application lost its status")
		}
	})
	t.Run("an Application without status", func(t *testing.T) {
		app := builders.Application("new").Pulled().Build()
		app.APIVersion, app.Kind = applicationGVK.GroupVersion().String(), applicationGVK.Kind
		u := storedForm(t, app)
		if _, err := trimStoredApplication(u); err != nil {
			t.Fatal(err)
		}
		if _, ok := u.Object["status"]; ok {
			t.Errorf("status %v appeared", u.Object["status"])
		}
	})
}

// BenchmarkCachedApplicationBytes prints the heap a cached hub Application takes in each
// form the manager's caches hold: typed (appstatus, aggregation), stored (propagation's
// unstructured), and stored after trimStoredApplication.
func BenchmarkCachedApplicationBytes(b *testing.B) {
	const n = 2000
	app := mirroredApplication("guestbook", 10)
	raw, err := json.Marshal(app)
	if err != nil {
		b.Fatal(err)
	}
	forms := map[string]func() any{
		"typed": func() any {
			a := &argov1alpha1.Application{}
			if err := json.Unmarshal(raw, a); err != nil {
				b.Fatal(err)
			}
			return a
		},
		"stored": func() any {
			u := storedApplication()
			if err := u.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
			return u
		},
		"stored-trimmed": func() any {
			u := storedApplication()
			if err := u.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
			out, _ := trimStoredApplication(u)
			return out
		},
	}
	for _, name := range []string{"typed", "stored", "stored-trimmed"} {
		b.Run(name, func(b *testing.B) {
			var perObject float64
			for range b.N {
				keep := make([]any, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range keep {
					keep[i] = forms[name]()
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perObject = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(keep)
			}
			b.ReportMetric(perObject, "heap-bytes/object")
			b.ReportMetric(float64(len(raw)), "json-bytes/object")
		})
	}
}

// storedApplication is an empty hub Application as stored, to read into.
func storedApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	return u
}

// typedView decodes u as the propagation controller does: through JSON, as from the API
// server.
func typedView(t testing.TB, u *unstructured.Unstructured) *argov1alpha1.Application {
	t.Helper()
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	app := &argov1alpha1.Application{}
	if err := json.Unmarshal(raw, app); err != nil {
		t.Fatal(err)
	}
	return app
}

func TestTrimCachedTreeDropsThePayloadOnly(t *testing.T) {
	observed := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	stored := &appsv1alpha1.ApplicationResourceTree{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "guestbook-0123456789",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd-pull-agent"}}},
		Source: appsv1alpha1.ApplicationReportSource{Cluster: "cluster1", Namespace: "argocd", Name: "guestbook",
			HubApplicationNamespace: "argocd", HubApplicationName: "guestbook"},
		Tree: appsv1alpha1.ResourceTreeData{Digest: strings.Repeat("a", 64), Nodes: 3, OmittedNodes: 1,
			Compressed: []byte("gzip of the tree"), ObservedAt: observed},
	}
	want := stored.DeepCopy()
	want.ManagedFields, want.Tree.Compressed = nil, nil

	got, err := trimCachedTree(stored)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimCachedTree (-want +got):\n%s", diff)
	}
}
