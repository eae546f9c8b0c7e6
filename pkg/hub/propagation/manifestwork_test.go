package propagation

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

// hubApplication is where the tests start: a pulled hub Application with the spec and
// status the golden payload below is written for.
func hubApplication(name string) *builders.ApplicationBuilder {
	return builders.Application(name).Pulled().
		UID("7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e").ResourceVersion("42").Generation(3).
		Destination(argov1alpha1.ApplicationDestination{Name: "cluster1", Namespace: "guestbook"}).
		SyncPolicy(argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true}}).
		Sync(argov1alpha1.SyncStatusCodeSynced, "abc").
		Health("Healthy", "")
}

// syncOperation is the operation a user's `argocd app sync` sets on the hub Application.
var syncOperation = argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD", Prune: true}}

func ptrTrue() *bool { t := true; return &t }

func TestValidateClusterAnnotation(t *testing.T) {
	tests := map[string]struct {
		app     *argov1alpha1.Application
		wantErr string
	}{
		"set":           {app: hubApplication("a").Cluster("cluster1").Build()},
		"missing":       {app: hubApplication("a").Build(), wantErr: "missing or empty"},
		"empty":         {app: hubApplication("a").Cluster("").Build(), wantErr: "missing or empty"},
		"blank":         {app: hubApplication("a").Cluster("  ").Build(), wantErr: "missing or empty"},
		"not a name":    {app: hubApplication("a").Cluster("Cluster_1").Build(), wantErr: "not a valid cluster name"},
		"surrounded ok": {app: hubApplication("a").Cluster(" cluster1 ").Build()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { checkErr(t, validateClusterAnnotation(tc.app), tc.wantErr) })
	}
}

func TestValidateAppNamespace(t *testing.T) {
	tests := map[string]struct {
		app     *argov1alpha1.Application
		wantErr string
	}{
		"unset": {app: hubApplication("a").Build()},
		"set":   {app: hubApplication("a").Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "openshift-gitops").Build()},
		"empty": {app: hubApplication("a").Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "").Build(), wantErr: "not a namespace name"},
		"bad":   {app: hubApplication("a").Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "Argo CD").Build(), wantErr: "not a namespace name"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { checkErr(t, validateAppNamespace(tc.app), tc.wantErr) })
	}
}

func TestValidateDestinationOverride(t *testing.T) {
	tests := map[string]struct {
		app     *argov1alpha1.Application
		wantErr string
	}{
		"none":         {app: hubApplication("a").Build()},
		"name":         {app: hubApplication("a").Annotation(apps.AnnotationDestinationName, "in-cluster").Build()},
		"server":       {app: hubApplication("a").Annotation(apps.AnnotationDestinationServer, "https://10.0.0.1:6443").Build()},
		"both":         {app: hubApplication("a").Annotation(apps.AnnotationDestinationName, "x").Annotation(apps.AnnotationDestinationServer, "https://a").Build(), wantErr: "both set"},
		"empty name":   {app: hubApplication("a").Annotation(apps.AnnotationDestinationName, " ").Build(), wantErr: "is empty"},
		"http server":  {app: hubApplication("a").Annotation(apps.AnnotationDestinationServer, "http://a").Build(), wantErr: "not an https URL"},
		"no host":      {app: hubApplication("a").Annotation(apps.AnnotationDestinationServer, "https://").Build(), wantErr: "not an https URL"},
		"not a URL":    {app: hubApplication("a").Annotation(apps.AnnotationDestinationServer, "::").Build(), wantErr: "not an https URL"},
		"empty server": {app: hubApplication("a").Annotation(apps.AnnotationDestinationServer, "").Build(), wantErr: "not an https URL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { checkErr(t, validateDestinationOverride(tc.app), tc.wantErr) })
	}
}

func TestValidateJoinsEveryRule(t *testing.T) {
	app := hubApplication("a").Annotation(apps.AnnotationDestinationServer, "http://x").Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "_").Build()
	err := validate(app)
	for _, want := range []string{apps.AnnotationOCMManagedCluster, apps.AnnotationDestinationServer, apps.AnnotationOCMManagedClusterAppNamespace} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want it to mention %s", err, want)
		}
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("want an error containing %q, got none", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func decodePayload(t *testing.T, w *workv1.ManifestWork) map[string]any {
	t.Helper()
	if len(w.Spec.Workload.Manifests) != 1 {
		t.Fatalf("want one manifest, got %d", len(w.Spec.Workload.Manifests))
	}
	var m map[string]any
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stored is app as the API server stores it, which the payload is built from.
func stored(t *testing.T, app *argov1alpha1.Application) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(app)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(applicationGVK)
	return u
}

// TestBuildManifestWorkGolden pins the exact ManifestWork of one Application.
func TestBuildManifestWorkGolden(t *testing.T) {
	app := stored(t, hubApplication("cluster1-guestbook").Cluster("cluster1").OwnedBy("guestbook", "appset-uid").
		Finalizer(pullmodel.ResourcesFinalizer).Operation(syncOperation).
		Label("app.kubernetes.io/part-of", "guestbook").
		Annotation(apps.AnnotationRefresh, "hard").
		Annotation(apps.AnnotationOCMManagedClusterAppNamespace, "openshift-gitops").Build())
	before := app.DeepCopy()
	reqs := requests.Carried{
		Operation: &requests.OperationRequest{ID: "op-1", Operation: json.RawMessage(`{"sync":{"prune":true,"revision":"HEAD"}}`)},
		Refresh:   &requests.RefreshRequest{ID: "refresh-1", Refresh: "hard"},
	}

	got, err := BuildManifestWork(app, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, app); diff != "" {
		t.Fatalf("BuildManifestWork modified its input (-before +after):\n%s", diff)
	}

	wantPayload := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name":      "cluster1-guestbook",
			"namespace": "openshift-gitops",
			"labels":    map[string]any{"app.kubernetes.io/part-of": "guestbook"},
			"annotations": map[string]any{
				apps.AnnotationHubApplicationNamespace: "argocd",
				apps.AnnotationHubApplicationName:      "cluster1-guestbook",
				apps.AnnotationHostingApplicationSet:   "argocd/guestbook",
				apps.AnnotationOperationRequest:        `{"id":"op-1","operation":{"sync":{"prune":true,"revision":"HEAD"}}}`,
				apps.AnnotationRefreshRequest:          `{"id":"refresh-1","refresh":"hard"}`,
			},
			"finalizers": []any{pullmodel.ResourcesFinalizer},
		},
		"spec": map[string]any{
			"project": "default",
			"source": map[string]any{
				"repoURL": "https://github.com/argoproj/argocd-example-apps", "path": "guestbook", "targetRevision": "HEAD"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
		},
	}
	if diff := cmp.Diff(wantPayload, decodePayload(t, got)); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	got.Spec.Workload = workv1.ManifestsTemplate{}
	want := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: "work.open-cluster-management.io/v1", Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "cluster1-guestbook-7c0e3", Namespace: "cluster1",
			Labels: map[string]string{
				"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true",
				"apps.open-cluster-management.io/application-set":             "true",
			},
			Annotations: map[string]string{
				"apps.open-cluster-management.io/hub-application-namespace": "argocd",
				"apps.open-cluster-management.io/hub-application-name":      "cluster1-guestbook",
				"apps.open-cluster-management.io/hosting-applicationset":    "argocd/guestbook",
			},
		},
		Spec: workv1.ManifestWorkSpec{
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{
					Group: "argoproj.io", Resource: "applications", Name: "cluster1-guestbook", Namespace: "openshift-gitops"},
				FeedbackRules: []workv1.FeedbackRule{{
					Type: workv1.JSONPathsType,
					JsonPaths: []workv1.JsonPath{
						{Name: "healthStatus", Path: ".status.health.status"},
						{Name: "syncStatus", Path: ".status.sync.status"},
						{Name: "operationStatePhase", Path: ".status.operationState.phase"},
						{Name: "operationStateStartedAt", Path: ".status.operationState.startedAt"},
						{Name: "syncRevision", Path: ".status.sync.revision"},
						{Name: "operationDelivered", Path: `.metadata.annotations.apps\.open-cluster-management\.io/operation-delivered`},
						{Name: "refreshDelivered", Path: `.metadata.annotations.apps\.open-cluster-management\.io/refresh-delivered`},
					},
				}},
				FeedbackScrapeType: workv1.FeedbackPollType,
				UpdateStrategy: &workv1.UpdateStrategy{
					Type: workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{
						Force: true, FieldManager: "work-agent",
						IgnoreFields: []workv1.IgnoreField{{
							Condition: workv1.IgnoreFieldsConditionOnSpokeChange,
							JSONPaths: []string{".operation", `.metadata.annotations.argocd\.argoproj\.io/refresh`},
						}},
					},
				},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ManifestWork (-want +got):\n%s", diff)
	}
}

func TestBuildManifestWorkStandalone(t *testing.T) {
	got, err := BuildManifestWork(stored(t, hubApplication("a").Cluster("c1").Build()), requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{apps.LabelPullToOCMManagedCluster: "true"}, got.Labels); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff(map[string]string{apps.AnnotationHubApplicationNamespace: "argocd", apps.AnnotationHubApplicationName: "a"}, got.Annotations); diff != "" {
		t.Error(diff)
	}
	if _, ok := decodePayload(t, got)["status"]; ok {
		t.Error("payload carries status")
	}
}

func TestWorkUpToDate(t *testing.T) {
	app := hubApplication("a").Cluster("c1").Build()
	desired, err := BuildManifestWork(stored(t, app), requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	reencoded := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		// What the API server hands back: keys sorted, null creationTimestamp dropped.
		var m map[string]any
		if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m["metadata"].(map[string]any), "creationTimestamp")
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests[0].Raw = raw
		return w
	}
	changedApp := app.DeepCopy()
	changedApp.Spec.Source.TargetRevision = "v2"
	changed, err := BuildManifestWork(stored(t, changedApp), requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	withRequest, err := BuildManifestWork(stored(t, app), requests.Carried{Refresh: &requests.RefreshRequest{ID: "r-1", Refresh: "normal"}})
	if err != nil {
		t.Fatal(err)
	}
	withNull := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		var m map[string]any
		if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
			t.Fatal(err)
		}
		m["spec"].(map[string]any)["info"] = nil
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests[0].Raw = raw
		return w
	}
	tests := map[string]struct {
		existing *workv1.ManifestWork
		want     bool
	}{
		"same":                     {existing: desired.DeepCopy(), want: true},
		"re-encoded by the server": {existing: reencoded(desired.DeepCopy()), want: true},
		"extra label from someone": {existing: withLabel(desired.DeepCopy(), "x", "y"), want: true},
		"null member":              {existing: withNull(desired.DeepCopy()), want: true},
		"spec changed":             {existing: changed, want: false},
		"request added":            {existing: withRequest, want: false},
		"label missing":            {existing: withoutLabel(desired.DeepCopy(), apps.LabelPullToOCMManagedCluster), want: false},
		"manifest configs differ":  {existing: withoutConfigs(desired.DeepCopy()), want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := workUpToDate(tc.existing, desired); got != tc.want {
				t.Errorf("workUpToDate() = %v, want %v", got, tc.want)
			}
		})
	}
}

func withLabel(w *workv1.ManifestWork, k, v string) *workv1.ManifestWork {
	w.Labels[k] = v
	return w
}

func withoutLabel(w *workv1.ManifestWork, k string) *workv1.ManifestWork {
	delete(w.Labels, k)
	return w
}

func withoutConfigs(w *workv1.ManifestWork) *workv1.ManifestWork {
	w.Spec.ManifestConfigs = nil
	return w
}

// TestBuiltWorkFeedbackIsReadBack feeds the ManifestWork this package builds, with a
// value for each of its own feedback rules as the work agent reports them, into the
// parser the status controllers use: every rule must be recognised and every scalar
// filled. Renaming a rule on either side fails here.
func TestBuiltWorkFeedbackIsReadBack(t *testing.T) {
	sample := map[string]string{
		".status.health.status":            "Healthy",
		".status.sync.status":              "Synced",
		".status.sync.revision":            "8f3c2b1",
		".status.operationState.phase":     "Succeeded",
		".status.operationState.startedAt": "2026-11-01T10:00:00Z",
		`.metadata.annotations.apps\.open-cluster-management\.io/operation-delivered`: "op-1",
		`.metadata.annotations.apps\.open-cluster-management\.io/refresh-delivered`:   "refresh-1",
	}
	w, err := BuildManifestWork(stored(t, hubApplication("guestbook").Cluster("cluster1").Build()), requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Spec.ManifestConfigs) != 1 {
		t.Fatalf("manifest configs = %d, want 1", len(w.Spec.ManifestConfigs))
	}
	cfg := w.Spec.ManifestConfigs[0]
	var values []workv1.FeedbackValue
	for _, rule := range cfg.FeedbackRules {
		for _, p := range rule.JsonPaths {
			v, ok := sample[p.Path]
			if !ok {
				t.Errorf("rule %q asks for %s, which this test does not know", p.Name, p.Path)
				continue
			}
			values = append(values, workv1.FeedbackValue{Name: p.Name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}})
		}
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{
			Group: cfg.ResourceIdentifier.Group, Version: "v1alpha1", Kind: "Application", Resource: cfg.ResourceIdentifier.Resource,
			Name: cfg.ResourceIdentifier.Name, Namespace: cfg.ResourceIdentifier.Namespace,
		},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}}
	got, found := pullmodel.ApplicationFeedback(w)
	if !found {
		t.Fatal("the parser does not find the Application manifest of the built work")
	}
	s, err := pullmodel.ScalarsFromFeedback(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		one, _ := pullmodel.ScalarsFromFeedback([]workv1.FeedbackValue{v})
		if one.IsEmpty() && pullmodel.DeliveredFromFeedback([]workv1.FeedbackValue{v}) == (pullmodel.Delivered{}) {
			t.Errorf("feedback value %q is not recognised by a parser", v.Name)
		}
	}
	if d := pullmodel.DeliveredFromFeedback(got); d != (pullmodel.Delivered{Operation: "op-1", Refresh: "refresh-1"}) {
		t.Errorf("delivered ids not read from the built work's feedback: %+v", d)
	}
	if s.Health == nil || s.Sync == nil || s.Revision == nil || s.OperationPhase == nil || s.OperationStartedAt == nil {
		t.Errorf("scalars not filled from the built work's feedback: %+v", s)
	}
}
