package requests

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Canonical operations as hubRequestsOf reads them.
var (
	syncHEAD = []byte(`{"sync":{"revision":"HEAD"}}`)
	syncOld  = []byte(`{"sync":{"revision":"v1"}}`)
)

func opRequest(id string, op []byte) *OperationRequest {
	return &OperationRequest{ID: id, Operation: json.RawMessage(op)}
}

func refreshRequest(id, refresh string) *RefreshRequest {
	return &RefreshRequest{ID: id, Refresh: refresh}
}

// mintAs mints "new-<kind>" so a case can tell a minted id from a kept one.
func mintAs(kind string, _ []byte) string { return "new-" + kind }

func TestNextRequests(t *testing.T) {
	tests := map[string]struct {
		hub       hubRequests
		carried   Carried
		delivered pullmodel.Delivered
		want      Carried
	}{
		"nothing asked, nothing carried": {},
		"first seen: a new id": {
			hub:  hubRequests{operation: syncHEAD, refresh: "normal"},
			want: Carried{Operation: opRequest("new-operation", syncHEAD), Refresh: refreshRequest("new-refresh", "normal")},
		},
		"carried, not delivered yet: the id is kept": {
			hub:     hubRequests{operation: syncHEAD, refresh: "hard"},
			carried: Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("r-1", "hard")},
			want:    Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("r-1", "hard")},
		},
		"carried with keys in another order: the same operation": {
			hub:     hubRequests{operation: []byte(`{"initiatedBy":{"username":"admin"},"sync":{"prune":true,"revision":"HEAD"}}`)},
			carried: Carried{Operation: opRequest("op-1", []byte(`{"sync":{"revision":"HEAD","prune":true},"initiatedBy":{"username":"admin"}}`))},
			want:    Carried{Operation: opRequest("op-1", []byte(`{"sync":{"revision":"HEAD","prune":true},"initiatedBy":{"username":"admin"}}`))},
		},
		"carried, delivered to another id: kept": {
			hub:       hubRequests{operation: syncHEAD},
			carried:   Carried{Operation: opRequest("op-2", syncHEAD)},
			delivered: pullmodel.Delivered{Operation: "op-1"},
			want:      Carried{Operation: opRequest("op-2", syncHEAD)},
		},
		"a different operation: a new id": {
			hub:     hubRequests{operation: syncHEAD},
			carried: Carried{Operation: opRequest("op-1", syncOld)},
			want:    Carried{Operation: opRequest("new-operation", syncHEAD)},
		},
		"a different refresh: a new id": {
			hub:     hubRequests{refresh: "hard"},
			carried: Carried{Refresh: refreshRequest("r-1", "normal")},
			want:    Carried{Refresh: refreshRequest("new-refresh", "hard")},
		},
		"the same operation after the last was delivered (and cleared): a new id": {
			hub:       hubRequests{operation: syncHEAD},
			carried:   Carried{Operation: opRequest("op-1", syncHEAD)},
			delivered: pullmodel.Delivered{Operation: "op-1"},
			want:      Carried{Operation: opRequest("new-operation", syncHEAD)},
		},
		"the same refresh after the last was delivered: a new id": {
			hub:       hubRequests{refresh: "normal"},
			carried:   Carried{Refresh: refreshRequest("r-1", "normal")},
			delivered: pullmodel.Delivered{Refresh: "r-1"},
			want:      Carried{Refresh: refreshRequest("new-refresh", "normal")},
		},
		"removed from the hub before delivery: dropped": {
			carried: Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("r-1", "normal")},
		},
		"cleared from the hub after delivery: dropped": {
			carried:   Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("r-1", "normal")},
			delivered: pullmodel.Delivered{Operation: "op-1", Refresh: "r-1"},
		},
		"each kind on its own": {
			hub:       hubRequests{operation: syncHEAD, refresh: "normal"},
			carried:   Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("r-1", "normal")},
			delivered: pullmodel.Delivered{Refresh: "r-1"},
			want:      Carried{Operation: opRequest("op-1", syncHEAD), Refresh: refreshRequest("new-refresh", "normal")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := nextRequests(tc.hub, tc.carried, tc.delivered, mintAs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nextRequests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHubRequestsOf(t *testing.T) {
	app := stored(t, hubApplication("a").Cluster("c1").Annotation(apps.AnnotationRefresh, "hard").
		Operation(argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD", Prune: true}}).Build())
	// A field only Argo CD 3 knows is part of the operation asked for.
	if err := unstructured.SetNestedField(app.Object, "v3-only", "operation", "sync", "futureField"); err != nil {
		t.Fatal(err)
	}
	got, err := hubRequestsOf(app)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"initiatedBy":{},"retry":{},"sync":{"futureField":"v3-only","prune":true,"revision":"HEAD"}}`; string(got.operation) != want {
		t.Errorf("operation = %s, want %s", got.operation, want)
	}
	if got.refresh != "hard" {
		t.Errorf("refresh = %q", got.refresh)
	}

	none, err := hubRequestsOf(stored(t, hubApplication("a").Cluster("c1").Build()))
	if err != nil || none.operation != nil || none.refresh != "" {
		t.Errorf("no requests read as %+v, %v", none, err)
	}
}

func TestRequestIDs(t *testing.T) {
	app := stored(t, hubApplication("a").Cluster("c1").Build())
	id := requestIDs(app)("operation", syncHEAD)
	if again := requestIDs(app.DeepCopy())("operation", syncHEAD); again != id {
		t.Errorf("the same request in the same version: %s, then %s", id, again)
	}
	later := app.DeepCopy()
	later.SetResourceVersion("43")
	recreated := app.DeepCopy()
	recreated.SetUID("another-uid")
	for name, other := range map[string]string{
		"another operation":          requestIDs(app)("operation", syncOld),
		"a refresh":                  requestIDs(app)("refresh", syncHEAD),
		"asked for again later":      requestIDs(later)("operation", syncHEAD),
		"in a recreated Application": requestIDs(recreated)("operation", syncHEAD),
	} {
		if other == id {
			t.Errorf("%s: same id %s", name, id)
		}
	}
}

// TestClearedRequestsOverlay: after a clear, a cache still showing a version the clear
// was written over reads as the cleared Application; once the cache is past it, an equal
// request next to a work still carrying the cleared id is a new one.
func TestClearedRequestsOverlay(t *testing.T) {
	key := types.NamespacedName{Namespace: "argocd", Name: "a"}
	version := func(rv string, op bool) *unstructured.Unstructured {
		b := hubApplication("a").Cluster("c1").ResourceVersion(rv)
		if op {
			b = b.Operation(argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}})
		}
		return stored(t, b.Build())
	}
	carrying := Carried{Operation: opRequest("op-1", syncHEAD)}

	c := newClearedRequests()
	if got, ids := c.overlay(key, version("10", true), carrying); got.GetResourceVersion() != "10" || ids != nil {
		t.Fatalf("nothing recorded: got version %s, ids %v", got.GetResourceVersion(), ids)
	}
	c.record(key, "10", version("11", false), []string{"op-1"})

	got, ids := c.overlay(key, version("10", true), carrying)
	if got.GetResourceVersion() != "11" || got.Object["operation"] != nil {
		t.Errorf("cache behind the clear: decided on version %s with operation %v, want the cleared 11", got.GetResourceVersion(), got.Object["operation"])
	}
	if diff := cmp.Diff([]string{"op-1"}, ids); diff != "" {
		t.Errorf("cleared ids (-want +got):\n%s", diff)
	}

	// A second clear chained on the first: both versions before it are behind.
	c.record(key, "11", version("12", false), []string{"r-1"})
	for _, rv := range []string{"10", "11"} {
		if got, _ := c.overlay(key, version(rv, true), carrying); got.GetResourceVersion() != "12" {
			t.Errorf("cache at %s: decided on version %s, want 12", rv, got.GetResourceVersion())
		}
	}

	// Past the clears, asked for again, the work still carrying the cleared id.
	got, ids = c.overlay(key, version("15", true), carrying)
	if got.GetResourceVersion() != "15" {
		t.Errorf("cache past the clear: decided on version %s, want 15", got.GetResourceVersion())
	}
	if diff := cmp.Diff([]string{"op-1"}, ids); diff != "" {
		t.Errorf("cleared ids still carried (-want +got):\n%s", diff)
	}
	if next := nextRequests(hubRequests{operation: syncHEAD}, carrying, pullmodel.Delivered{Operation: "op-1"}, mintAs); next.Operation.ID != "new-operation" {
		t.Errorf("asked for again after the clear: id %s, want a new one", next.Operation.ID)
	}

	// The work no longer carries it: the record goes.
	if _, ids := c.overlay(key, version("16", false), Carried{}); ids != nil {
		t.Errorf("ids %v after the work dropped them", ids)
	}
	if got, _ := c.overlay(key, version("10", true), carrying); got.GetResourceVersion() != "10" {
		t.Error("the record outlived the work's update")
	}

	// A recreated Application (new UID) never sees an old record.
	c.record(key, "20", version("21", false), []string{"op-9"})
	recreated := version("20", true)
	recreated.SetUID("another-uid")
	if got, ids := c.overlay(key, recreated, carrying); got != recreated || ids != nil {
		t.Error("a recreated Application got the old one's record")
	}
}

func TestOperationCompleted(t *testing.T) {
	at := func(s string) metav1.Time {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.NewTime(ts)
	}
	req := func(after string) *OperationRequest { return &OperationRequest{ID: "x", After: after} }
	tests := map[string]struct {
		op   *argov1alpha1.OperationState
		req  *OperationRequest
		want bool
	}{
		"no operation shown yet": {req: req(""), want: false},
		"the first operation shown": {
			op: &argov1alpha1.OperationState{Phase: synccommon.OperationSucceeded, StartedAt: at("2026-11-25T10:00:00Z")}, req: req(""), want: true,
		},
		"still the one shown when the request was made": {
			op:  &argov1alpha1.OperationState{Phase: synccommon.OperationSucceeded, StartedAt: at("2026-11-25T10:00:00Z")},
			req: req("2026-11-25T10:00:00Z"), want: false,
		},
		"one started later": {
			op:  &argov1alpha1.OperationState{Phase: synccommon.OperationSucceeded, StartedAt: at("2026-11-25T10:00:01Z")},
			req: req("2026-11-25T10:00:00Z"), want: true,
		},
		"running, started later: not yet": {
			op:  &argov1alpha1.OperationState{Phase: synccommon.OperationRunning, StartedAt: at("2026-11-25T10:00:05Z")},
			req: req("2026-11-25T10:00:00Z"), want: false,
		},
		"failed, started later": {
			op:  &argov1alpha1.OperationState{Phase: synccommon.OperationFailed, StartedAt: at("2026-11-25T10:00:05Z")},
			req: req("2026-11-25T10:00:00Z"), want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := operationCompleted(tc.op, tc.req); got != tc.want {
				t.Errorf("operationCompleted = %v, want %v", got, tc.want)
			}
		})
	}
}
