package propagation

import (
	"testing"

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
)

// storedApp is a hub Application as the manager caches it for propagation (trimmed).
func storedApp(t *testing.T, change func(map[string]any)) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "guestbook", "namespace": "argocd", "resourceVersion": "1", "generation": int64(7),
			"labels": map[string]any{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"}},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://example.com/repo.git", "targetRevision": "v1"}},
		"status": map[string]any{
			"health":         map[string]any{"status": "Healthy"},
			"sync":           map[string]any{"status": "Synced", "revision": "abc"},
			"resources":      []any{map[string]any{"kind": "Service", "name": "guestbook-ui"}},
			"operationState": map[string]any{"phase": "Succeeded", "startedAt": "2026-11-26T09:00:00Z", "message": "done"},
		},
	}}
	if change != nil {
		change(u.Object)
	}
	// The manager's cache transform keeps of the status the conditions propagation
	// writes and what the request protocol reads.
	kept := requests.CachedStatus(u.Object)
	if conditions, ok := status(u.Object)["conditions"]; ok {
		kept["conditions"] = conditions
	}
	u.Object["status"] = kept
	return u
}

func status(obj map[string]any) map[string]any { return obj["status"].(map[string]any) }

func TestStoredApplicationChanged(t *testing.T) {
	cases := []struct {
		name   string
		change func(map[string]any)
		want   bool
	}{
		{name: "only the resourceVersion and generation (the mirror of a spoke status change)", change: func(o map[string]any) {
			o["metadata"].(map[string]any)["resourceVersion"] = "2"
			o["metadata"].(map[string]any)["generation"] = int64(8)
			status(o)["health"] = map[string]any{"status": "Progressing"}
			status(o)["sync"] = map[string]any{"status": "OutOfSync", "revision": "def"}
			status(o)["resources"] = []any{}
			status(o)["operationState"].(map[string]any)["message"] = "running again"
		}},
		{name: "a label", want: true, change: func(o map[string]any) {
			o["metadata"].(map[string]any)["labels"] = map[string]any{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "false"}
		}},
		{name: "an annotation", want: true, change: func(o map[string]any) {
			o["metadata"].(map[string]any)["annotations"] = map[string]any{"apps.open-cluster-management.io/ocm-managed-cluster": "cluster2"}
		}},
		{name: "deletion started", want: true, change: func(o map[string]any) {
			o["metadata"].(map[string]any)["deletionTimestamp"] = "2026-11-26T09:01:00Z"
		}},
		{name: "the spec", want: true, change: func(o map[string]any) {
			o["spec"].(map[string]any)["source"].(map[string]any)["targetRevision"] = "v2"
		}},
		{name: "an operation asked for", want: true, change: func(o map[string]any) {
			o["operation"] = map[string]any{"sync": map[string]any{"revision": "v2"}}
		}},
		{name: "a condition", want: true, change: func(o map[string]any) {
			status(o)["conditions"] = []any{map[string]any{"type": "InvalidSpecError", "message": "x"}}
		}},
		{name: "the operation's phase", want: true, change: func(o map[string]any) {
			status(o)["operationState"].(map[string]any)["phase"] = "Running"
		}},
		{name: "the operation's start", want: true, change: func(o map[string]any) {
			status(o)["operationState"].(map[string]any)["startedAt"] = "2026-11-26T09:05:00Z"
		}},
	}
	p := storedApplicationChanged()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Update(event.UpdateEvent{ObjectOld: storedApp(t, nil), ObjectNew: storedApp(t, tc.change)})
			if got != tc.want {
				t.Errorf("passed: %t, want %t", got, tc.want)
			}
		})
	}
	t.Run("the sync status while the hub holds an operation (it may be waiting for its comparison)", func(t *testing.T) {
		held := func(o map[string]any) {
			o["operation"] = map[string]any{"sync": map[string]any{"revision": "v2"}}
			status(o)["sync"] = map[string]any{"status": "OutOfSync", "revision": "abc"}
		}
		compared := func(o map[string]any) {
			held(o)
			status(o)["sync"] = map[string]any{"status": "Synced", "revision": "def"}
		}
		if !p.Update(event.UpdateEvent{ObjectOld: storedApp(t, held), ObjectNew: storedApp(t, compared)}) {
			t.Error("OutOfSync → Synced with an operation held did not pass")
		}
	})
}

func workWith(change func(*workv1.ManifestWork)) *workv1.ManifestWork {
	feedback := func(name, value string) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(value)}}
	}
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "guestbook-1234", Generation: 1, ResourceVersion: "1",
			Labels: map[string]string{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"}},
		Status: workv1.ManifestWorkStatus{
			Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Message: "applied"}},
			ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: argoapp.Group, Version: "v1alpha1", Kind: argoapp.ApplicationKind,
					Resource: argoapp.ApplicationPlural, Namespace: "argocd", Name: "guestbook"},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					feedback(pullmodel.FeedbackHealthStatus, "Healthy"),
					feedback(pullmodel.FeedbackOperationDelivered, "op-1"),
					feedback(pullmodel.FeedbackRefreshDelivered, "refresh-1"),
				}},
			}}},
		},
	}
	if change != nil {
		change(mw)
	}
	return mw
}

func setFeedback(mw *workv1.ManifestWork, name, value string) {
	values := mw.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
	for i := range values {
		if values[i].Name == name {
			values[i].Value.String = ptr.To(value)
		}
	}
}

func TestWorkChanged(t *testing.T) {
	cases := []struct {
		name   string
		change func(*workv1.ManifestWork)
		want   bool
	}{
		{name: "the spoke's health and the work agent's conditions (a status change of the spoke)", change: func(mw *workv1.ManifestWork) {
			mw.ResourceVersion = "2"
			setFeedback(mw, pullmodel.FeedbackHealthStatus, "Progressing")
			mw.Status.Conditions[0].Message = "applied again"
		}},
		{name: "an operation received", want: true, change: func(mw *workv1.ManifestWork) { setFeedback(mw, pullmodel.FeedbackOperationDelivered, "op-2") }},
		{name: "a refresh received", want: true, change: func(mw *workv1.ManifestWork) { setFeedback(mw, pullmodel.FeedbackRefreshDelivered, "refresh-2") }},
		{name: "the spec (edited by hand)", want: true, change: func(mw *workv1.ManifestWork) {
			mw.Generation = 2
			mw.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		}},
		{name: "a label", want: true, change: func(mw *workv1.ManifestWork) { mw.Labels = nil }},
		{name: "an annotation", want: true, change: func(mw *workv1.ManifestWork) { mw.Annotations = map[string]string{"a": "b"} }},
		{name: "a finalizer", want: true, change: func(mw *workv1.ManifestWork) {
			mw.Finalizers = []string{"cluster.open-cluster-management.io/manifest-work-cleanup"}
		}},
		{name: "deletion started", want: true, change: func(mw *workv1.ManifestWork) { mw.DeletionTimestamp = ptr.To(metav1.Now()) }},
	}
	p := workChanged()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: workWith(nil), ObjectNew: workWith(tc.change)}); got != tc.want {
				t.Errorf("passed: %t, want %t", got, tc.want)
			}
		})
	}
}
