package propagation

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

func TestBuildPayload(t *testing.T) {
	destination := func(t *testing.T, p *unstructured.Unstructured) map[string]any {
		t.Helper()
		d, _, err := unstructured.NestedMap(p.Object, "spec", "destination")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := map[string]struct {
		app   *argov1alpha1.Application
		reqs  requests.Carried
		check func(t *testing.T, p *unstructured.Unstructured)
	}{
		"destination forced to the spoke's own API server": {
			app: hubApplication("a").Cluster("c1").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if diff := cmp.Diff(map[string]any{"server": defaultDestinationServer, "namespace": "guestbook"}, destination(t, p)); diff != "" {
					t.Error(diff)
				}
			},
		},
		"destination-name override": {
			app: hubApplication("a").Cluster("c1").Annotation(apps.AnnotationDestinationName, "in-cluster").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if diff := cmp.Diff(map[string]any{"name": "in-cluster", "namespace": "guestbook"}, destination(t, p)); diff != "" {
					t.Error(diff)
				}
			},
		},
		"destination-server override": {
			app: hubApplication("a").Cluster("c1").Annotation(apps.AnnotationDestinationServer, "https://10.0.0.1:6443").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if diff := cmp.Diff(map[string]any{"server": "https://10.0.0.1:6443", "namespace": "guestbook"}, destination(t, p)); diff != "" {
					t.Error(diff)
				}
			},
		},
		"namespace defaults to the hub Application's": {
			app: hubApplication("a").Cluster("c1").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if p.GetNamespace() != "argocd" {
					t.Errorf("namespace %q", p.GetNamespace())
				}
			},
		},
		"selection keys, hub requests and the agent's keys stripped, others kept, identity dropped": {
			app: hubApplication("a").Cluster("c1").Label("team", "x").Annotation("note", "y").
				Annotation(apps.AnnotationDestinationName, "in-cluster").Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "gitops").
				Annotation(apps.AnnotationRefresh, "normal").Operation(syncOperation).
				Annotation(apps.AnnotationOperationRequest, `{"id":"forged","operation":{}}`).
				Annotation(apps.AnnotationRefreshRequest, `{"id":"forged","refresh":"hard"}`).
				Annotation(apps.AnnotationOperationDelivered, "x").Annotation(apps.AnnotationRefreshDelivered, "y").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if diff := cmp.Diff(map[string]string{"team": "x"}, p.GetLabels()); diff != "" {
					t.Error(diff)
				}
				want := map[string]string{"note": "y", apps.AnnotationHubApplicationNamespace: "argocd", apps.AnnotationHubApplicationName: "a"}
				if diff := cmp.Diff(want, p.GetAnnotations()); diff != "" {
					t.Error(diff)
				}
				if diff := cmp.Diff([]string{"apiVersion", "kind", "metadata", "spec"}, slices.Sorted(maps.Keys(p.Object))); diff != "" {
					t.Errorf("top-level fields (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"annotations", "labels", "name", "namespace"}, slices.Sorted(maps.Keys(p.Object["metadata"].(map[string]any)))); diff != "" {
					t.Errorf("metadata fields (-want +got):\n%s", diff)
				}
			},
		},
		"requests as annotations": {
			app: hubApplication("a").Cluster("c1").Build(),
			reqs: requests.Carried{
				Operation: &requests.OperationRequest{ID: "op-1", Operation: json.RawMessage(`{"sync":{"revision":"HEAD"}}`)},
				Refresh:   &requests.RefreshRequest{ID: "r-1", Refresh: "normal"},
			},
			check: func(t *testing.T, p *unstructured.Unstructured) {
				op, err := requests.ParseOperationRequest(p.GetAnnotations()[apps.AnnotationOperationRequest])
				if err != nil || op.ID != "op-1" || string(op.Operation) != `{"sync":{"revision":"HEAD"}}` {
					t.Errorf("operation request %+v, %v", op, err)
				}
				refresh, err := requests.ParseRefreshRequest(p.GetAnnotations()[apps.AnnotationRefreshRequest])
				if err != nil || refresh != (requests.RefreshRequest{ID: "r-1", Refresh: "normal"}) {
					t.Errorf("refresh request %+v, %v", refresh, err)
				}
			},
		},
		"standalone: no hosting-applicationset": {
			app: hubApplication("a").Cluster("c1").Build(),
			check: func(t *testing.T, p *unstructured.Unstructured) {
				if _, ok := p.GetAnnotations()[apps.AnnotationHostingApplicationSet]; ok {
					t.Error("hosting-applicationset on a standalone Application")
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			app := stored(t, tc.app)
			before := app.DeepCopy()
			p, err := buildPayload(app, tc.reqs)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
			if diff := cmp.Diff(before, app); diff != "" {
				t.Fatalf("buildPayload modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

// argoCD3Application is a hub Application with fields only Argo CD 3 knows, as stored.
const argoCD3Application = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
  uid: 7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e
  resourceVersion: "42"
  labels:
    apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"
  annotations:
    apps.open-cluster-management.io/ocm-managed-cluster: cluster1
    argocd.argoproj.io/skip-reconcile: "true"
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps
    path: kustomize-guestbook
    targetRevision: HEAD
    kustomize:
      ignoreMissingComponents: true
      labelIncludeTemplates: true
      commonLabels:
        team: guestbook
  destination:
    name: in-cluster
    namespace: guestbook
  syncPolicy:
    automated:
      enabled: false
      prune: true
    retry:
      limit: 3
      refresh: true
  someFutureField:
    nested: [1, "two", {three: 3}]
status:
  sync:
    status: Synced
`

// TestBuildPayloadKeepsWhatTheUserWrote: fields this module's Argo CD v2 types do not
// know reach the cluster unchanged. automated.enabled: false decoded through the v2 types
// would arrive as automated: {}, which Argo CD 3 runs as automated sync on.
func TestBuildPayloadKeepsWhatTheUserWrote(t *testing.T) {
	app := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(argoCD3Application), &app.Object); err != nil {
		t.Fatal(err)
	}
	w, err := BuildManifestWork(app, requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	payload := decodePayload(t, w)
	for _, path := range [][]string{
		{"spec", "syncPolicy"},
		{"spec", "source"},
		{"spec", "project"},
		{"spec", "someFutureField"},
		{"spec", "syncPolicy", "automated", "enabled"},
		{"spec", "syncPolicy", "retry", "refresh"},
		{"spec", "source", "kustomize", "ignoreMissingComponents"},
		{"spec", "source", "kustomize", "labelIncludeTemplates"},
	} {
		want, found, err := unstructured.NestedFieldNoCopy(app.Object, path...)
		if !found || err != nil {
			t.Fatalf("test input lacks %v", path)
		}
		got, found, _ := unstructured.NestedFieldNoCopy(payload, path...)
		if !found {
			t.Errorf("payload lacks %s", strings.Join(path, "."))
			continue
		}
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(got)
		if string(wantJSON) != string(gotJSON) {
			t.Errorf("%s = %s in the payload, want %s", strings.Join(path, "."), gotJSON, wantJSON)
		}
	}
	if enabled, _, _ := unstructured.NestedFieldNoCopy(payload, "spec", "syncPolicy", "automated", "enabled"); enabled != false {
		t.Errorf("automated.enabled = %v, want false", enabled)
	}
	if diff := cmp.Diff(map[string]any{"server": defaultDestinationServer, "namespace": "guestbook"}, payload["spec"].(map[string]any)["destination"]); diff != "" {
		t.Errorf("destination (-want +got):\n%s", diff)
	}
	if _, ok := payload["status"]; ok {
		t.Error("payload carries status")
	}

	// And the work is up to date with itself re-encoded: nothing Argo CD 3 added makes it
	// look changed.
	again, err := BuildManifestWork(app, requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if !workUpToDate(w, again) {
		t.Error("a rebuilt work is not up to date with the first")
	}
	changed := app.DeepCopy()
	if err := unstructured.SetNestedField(changed.Object, true, "spec", "syncPolicy", "automated", "enabled"); err != nil {
		t.Fatal(err)
	}
	turnedOn, err := BuildManifestWork(changed, requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if workUpToDate(w, turnedOn) {
		t.Error("turning automated.enabled on does not change the work")
	}
}

// TestCarriedRequestsReadsWhatBuildPayloadWrites: the ids the next reconcile keeps are
// the ones the work was built with.
func TestCarriedRequestsReadsWhatBuildPayloadWrites(t *testing.T) {
	reqs := requests.Carried{
		Operation: &requests.OperationRequest{ID: "op-1", Operation: json.RawMessage(`{"sync":{"revision":"HEAD"}}`)},
		Refresh:   &requests.RefreshRequest{ID: "r-1", Refresh: "normal"},
	}
	w, err := BuildManifestWork(stored(t, hubApplication("a").Cluster("c1").Build()), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reqs, requests.CarriedBy(w)); diff != "" {
		t.Errorf("carried (-want +got):\n%s", diff)
	}

	for name, work := range map[string]*workv1.ManifestWork{
		"no work":     nil,
		"no manifest": {},
		"malformed request": func() *workv1.ManifestWork {
			w := w.DeepCopy()
			w.Spec.Workload.Manifests[0].Raw = []byte(`{"metadata":{"annotations":{"` + apps.AnnotationOperationRequest + `":"{\"id\":\"\"}"}}}`)
			return w
		}(),
	} {
		if got := requests.CarriedBy(work); got != (requests.Carried{}) {
			t.Errorf("%s: carried %+v, want none", name, got)
		}
	}
}
