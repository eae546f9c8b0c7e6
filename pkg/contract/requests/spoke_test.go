package requests

import (
	"encoding/json"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestSpokePatch(t *testing.T) {
	const opRequest = `{"id":"op-1","operation":{"sync":{"revision":"HEAD","futureField":true}}}`
	pulled := func() *builders.ApplicationBuilder {
		return builders.Application("guestbook").PulledFrom("argocd", "guestbook").ResourceVersion("7")
	}
	running := argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "v1"}}
	tests := map[string]struct {
		app       *argov1alpha1.Application
		want      string // the patch as JSON, "" for none
		delivered Deliveries
	}{
		"no request": {app: pulled().Build()},
		"an operation request: set with its id, verbatim": {
			app:       pulled().Annotation(apps.AnnotationOperationRequest, opRequest).Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/operation-delivered":"op-1"},"resourceVersion":"7"},"operation":{"sync":{"revision":"HEAD","futureField":true}}}`,
			delivered: Deliveries{Operation: "op-1"},
		},
		"already delivered: nothing": {
			app: pulled().Annotation(apps.AnnotationOperationRequest, opRequest).
				Annotation(apps.AnnotationOperationDelivered, "op-1").Build(),
		},
		"a new id after a delivered one": {
			app: pulled().Annotation(apps.AnnotationOperationRequest, `{"id":"op-2","operation":{"sync":{}}}`).
				Annotation(apps.AnnotationOperationDelivered, "op-1").Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/operation-delivered":"op-2"},"resourceVersion":"7"},"operation":{"sync":{}}}`,
			delivered: Deliveries{Operation: "op-2"},
		},
		"an operation in progress: the request waits": {
			app:       pulled().Annotation(apps.AnnotationOperationRequest, opRequest).Operation(running).Build(),
			delivered: Deliveries{Waiting: "op-1"},
		},
		"a refresh request": {
			app:       pulled().Annotation(apps.AnnotationRefreshRequest, `{"id":"r-1","refresh":"normal"}`).Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/refresh-delivered":"r-1","argocd.argoproj.io/refresh":"normal"},"resourceVersion":"7"}}`,
			delivered: Deliveries{Refresh: "r-1"},
		},
		"a refresh request does not weaken a pending hard refresh": {
			app: pulled().Annotation(apps.AnnotationRefreshRequest, `{"id":"r-1","refresh":"normal"}`).
				Annotation(apps.AnnotationRefresh, "hard").Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/refresh-delivered":"r-1"},"resourceVersion":"7"}}`,
			delivered: Deliveries{Refresh: "r-1"},
		},
		"a refresh runs while an operation waits": {
			app: pulled().Annotation(apps.AnnotationOperationRequest, opRequest).Operation(running).
				Annotation(apps.AnnotationRefreshRequest, `{"id":"r-1","refresh":"hard"}`).Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/refresh-delivered":"r-1","argocd.argoproj.io/refresh":"hard"},"resourceVersion":"7"}}`,
			delivered: Deliveries{Refresh: "r-1", Waiting: "op-1"},
		},
		"both in one patch": {
			app: pulled().Annotation(apps.AnnotationOperationRequest, opRequest).
				Annotation(apps.AnnotationRefreshRequest, `{"id":"r-1","refresh":"normal"}`).Build(),
			want:      `{"metadata":{"annotations":{"apps.open-cluster-management.io/operation-delivered":"op-1","apps.open-cluster-management.io/refresh-delivered":"r-1","argocd.argoproj.io/refresh":"normal"},"resourceVersion":"7"},"operation":{"sync":{"revision":"HEAD","futureField":true}}}`,
			delivered: Deliveries{Operation: "op-1", Refresh: "r-1"},
		},
		"malformed requests are skipped": {
			app: pulled().Annotation(apps.AnnotationOperationRequest, `{"id":"op-1","operation":"sync"}`).
				Annotation(apps.AnnotationRefreshRequest, `not json`).Build(),
			delivered: Deliveries{Skipped: []string{
				"annotation apps.open-cluster-management.io/operation-request: the operation is not a JSON object",
				"annotation apps.open-cluster-management.io/refresh-request is not a JSON request: invalid character 'o' in literal null (expecting 'u')",
			}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			patch, delivered := SpokePatch(tc.app)
			got := ""
			if patch != nil {
				raw, err := json.Marshal(patch)
				if err != nil {
					t.Fatal(err)
				}
				got = string(raw)
			}
			if got != tc.want {
				t.Errorf("patch\n got %s\nwant %s", got, tc.want)
			}
			if diff := cmp.Diff(tc.delivered, delivered); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
		})
	}
}
