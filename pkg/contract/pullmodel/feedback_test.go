package pullmodel

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"open-cluster-management.io/ocm/pkg/work/spoke/statusfeedback"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

var (
	started = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	later   = metav1.NewTime(time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC))
	now     = metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
)

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
}

func TestScalarsFromFeedback(t *testing.T) {
	tests := map[string]struct {
		values  []workv1.FeedbackValue
		want    Scalars
		wantErr bool
	}{
		"no values": {},
		"all five": {
			values: []workv1.FeedbackValue{
				str(FeedbackHealthStatus, "Healthy"),
				str(FeedbackSyncStatus, "Synced"),
				str(FeedbackSyncRevision, "8f3c2b1"),
				str(FeedbackOperationStatePhase, "Succeeded"),
				str(FeedbackOperationStateStartedAt, "2026-11-01T10:00:00Z"),
			},
			want: Scalars{
				Health:             ptr.To(health.HealthStatusHealthy),
				Sync:               ptr.To(argov1alpha1.SyncStatusCodeSynced),
				Revision:           ptr.To("8f3c2b1"),
				OperationPhase:     ptr.To(synccommon.OperationSucceeded),
				OperationStartedAt: &started,
			},
		},
		"a subset": {
			values: []workv1.FeedbackValue{str(FeedbackHealthStatus, "Progressing")},
			want:   Scalars{Health: ptr.To(health.HealthStatusProgressing)},
		},
		"unknown names are skipped": {
			values: []workv1.FeedbackValue{str("replicas", "3"), str(FeedbackSyncStatus, "OutOfSync")},
			want:   Scalars{Sync: ptr.To(argov1alpha1.SyncStatusCodeOutOfSync)},
		},
		"start time with an offset": {
			values: []workv1.FeedbackValue{str(FeedbackOperationStateStartedAt, "2026-11-01T11:00:00+01:00")},
			want:   Scalars{OperationStartedAt: &started},
		},
		"malformed start time is left out, the rest counts": {
			values: []workv1.FeedbackValue{
				str(FeedbackOperationStateStartedAt, "yesterday"),
				str(FeedbackOperationStatePhase, "Running"),
			},
			want:    Scalars{OperationPhase: ptr.To(synccommon.OperationRunning)},
			wantErr: true,
		},
		"wrong type is left out": {
			values: []workv1.FeedbackValue{
				{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
				str(FeedbackSyncStatus, "Synced"),
			},
			want:    Scalars{Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced)},
			wantErr: true,
		},
		"type String without a string does not panic": {
			values:  []workv1.FeedbackValue{{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.String}}},
			wantErr: true,
		},
		"type JsonRaw without a value does not panic": {
			values:  []workv1.FeedbackValue{{Name: FeedbackHealthStatus, Value: workv1.FieldValue{Type: workv1.JsonRaw}}},
			wantErr: true,
		},
		"JSON string in JsonRaw": {
			values: []workv1.FeedbackValue{{Name: FeedbackSyncRevision, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`"abc"`)}}},
			want:   Scalars{Revision: ptr.To("abc")},
		},
		"JSON object in JsonRaw is left out": {
			values:  []workv1.FeedbackValue{{Name: FeedbackSyncRevision, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`{"a":1}`)}}},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ScalarsFromFeedback(tc.values)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("feedback (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplicationFeedback(t *testing.T) {
	values := []workv1.FeedbackValue{str(FeedbackHealthStatus, "Healthy")}
	other := []workv1.FeedbackValue{str(FeedbackHealthStatus, "Degraded")}
	manifest := func(group, kind, resource string, v []workv1.FeedbackValue) workv1.ManifestCondition {
		return workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: group, Kind: kind, Resource: resource, Name: "app"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: v},
		}
	}
	tests := map[string]struct {
		manifests []workv1.ManifestCondition
		want      []workv1.FeedbackValue
		wantFound bool
	}{
		"no status yet": {},
		"application manifest": {
			manifests: []workv1.ManifestCondition{manifest("argoproj.io", "Application", "applications", values)},
			want:      values, wantFound: true,
		},
		"kind only (resource not resolved)": {
			manifests: []workv1.ManifestCondition{manifest("argoproj.io", "Application", "", values)},
			want:      values, wantFound: true,
		},
		"other manifests do not count": {
			manifests: []workv1.ManifestCondition{
				manifest("", "ConfigMap", "configmaps", other),
				manifest("argoproj.io", "AppProject", "appprojects", other),
				manifest("argoproj.io", "Application", "applications", values),
			},
			want: values, wantFound: true,
		},
		"only other manifests": {
			manifests: []workv1.ManifestCondition{manifest("apps", "Deployment", "deployments", other)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mw := &workv1.ManifestWork{}
			mw.Status.ResourceStatus.Manifests = tc.manifests
			got, found := ApplicationFeedback(mw)
			if found != tc.wantFound {
				t.Fatalf("found = %v, want %v", found, tc.wantFound)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
	if _, found := ApplicationFeedback(nil); found {
		t.Error("nil ManifestWork: found feedback")
	}
}

func TestDeliveredFromFeedback(t *testing.T) {
	tests := map[string]struct {
		values []workv1.FeedbackValue
		want   Delivered
	}{
		"none":               {values: []workv1.FeedbackValue{str(FeedbackSyncStatus, "Synced")}},
		"operation":          {values: []workv1.FeedbackValue{str(FeedbackOperationDelivered, "op-1")}, want: Delivered{Operation: "op-1"}},
		"both":               {values: []workv1.FeedbackValue{str(FeedbackRefreshDelivered, "r-2"), str(FeedbackOperationDelivered, "op-1")}, want: Delivered{Operation: "op-1", Refresh: "r-2"}},
		"JSON string":        {values: []workv1.FeedbackValue{{Name: FeedbackRefreshDelivered, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(`"r-2"`)}}}, want: Delivered{Refresh: "r-2"}},
		"wrong type is none": {values: []workv1.FeedbackValue{{Name: FeedbackOperationDelivered, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := DeliveredFromFeedback(tc.values); got != tc.want {
				t.Errorf("DeliveredFromFeedback() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFeedbackRulesReadByTheWorkAgent runs the rules through the OCM work agent's own
// status reader on a spoke Application: the annotation paths, dots escaped, must find the
// delivered ids next to the other annotations, and every value must parse back.
func TestFeedbackRulesReadByTheWorkAgent(t *testing.T) {
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name": "guestbook", "namespace": "argocd",
			"annotations": map[string]any{
				apps.AnnotationOperationDelivered:           "op-1",
				apps.AnnotationRefreshDelivered:             "refresh-2",
				apps.AnnotationOperationRequest:             `{"id":"op-3","operation":{}}`,
				"apps.open-cluster-management.io/operation": "not this one",
			},
		},
		"status": map[string]any{
			"health":         map[string]any{"status": "Healthy"},
			"sync":           map[string]any{"status": "Synced", "revision": "8f3c2b1"},
			"operationState": map[string]any{"phase": "Succeeded", "startedAt": "2026-11-01T10:00:00Z"},
		},
	}}
	var values []workv1.FeedbackValue
	for _, rule := range FeedbackRules() {
		got, err := statusfeedback.NewStatusReader().GetValuesByRule(app, rule)
		if err != nil {
			t.Fatalf("the work agent's reader refuses the rules: %v", err)
		}
		values = append(values, got...)
	}
	if got, want := DeliveredFromFeedback(values), (Delivered{Operation: "op-1", Refresh: "refresh-2"}); got != want {
		t.Errorf("delivered = %+v, want %+v (values %+v)", got, want, values)
	}
	s, err := ScalarsFromFeedback(values)
	if err != nil {
		t.Fatal(err)
	}
	if s.Health == nil || s.Sync == nil || s.Revision == nil || s.OperationPhase == nil || s.OperationStartedAt == nil {
		t.Errorf("scalars not all read: %+v", s)
	}

	// Without the annotations the values are absent, not empty strings.
	unstructured.RemoveNestedField(app.Object, "metadata", "annotations")
	values = nil
	for _, rule := range FeedbackRules() {
		got, err := statusfeedback.NewStatusReader().GetValuesByRule(app, rule)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, got...)
	}
	if got := DeliveredFromFeedback(values); got != (Delivered{}) {
		t.Errorf("delivered without annotations = %+v", got)
	}
}
