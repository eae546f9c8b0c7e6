package appstatus

import (
	"context"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func appAt(resourceVersion string) *argov1alpha1.Application {
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "guestbook", ResourceVersion: resourceVersion}}
}

// The tracker of the controller's own writes holds a write only until the cache has it:
// else it would keep a copy of every Application the controller ever wrote.
func TestCachedWritesAreForgotten(t *testing.T) {
	r := &reconciler{}
	handler := r.written.EventHandler()
	ctx := context.Background()

	r.written.Wrote("1", appAt("2"))
	r.written.Wrote("2", appAt("3"))
	handler.Update(ctx, event.TypedUpdateEvent[*argov1alpha1.Application]{ObjectOld: appAt("1"), ObjectNew: appAt("2")}, nil)
	if r.written.Len() != 1 {
		t.Fatalf("forgot the last write when the cache saw only the one before it")
	}
	handler.Update(ctx, event.TypedUpdateEvent[*argov1alpha1.Application]{ObjectOld: appAt("2"), ObjectNew: appAt("3")}, nil)
	if r.written.Len() != 0 {
		t.Errorf("still remembers the write the cache has seen")
	}

	r.written.Wrote("3", appAt("4"))
	handler.Delete(ctx, event.TypedDeleteEvent[*argov1alpha1.Application]{Object: appAt("3")}, nil)
	if r.written.Len() != 0 {
		t.Errorf("still remembers a write of a deleted Application")
	}
}
