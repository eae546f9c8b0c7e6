package requests

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"k8s.io/apimachinery/pkg/types"
)

func statusOf(phase synccommon.OperationPhase, sync argov1alpha1.SyncStatusCode) *argov1alpha1.ApplicationStatus {
	st := &argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: sync}}
	if phase != "" {
		st.OperationState = &argov1alpha1.OperationState{Phase: phase}
	}
	return st
}

func TestAwaitingComparison(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status *argov1alpha1.ApplicationStatus
		want   bool
	}{
		{"succeeded, still OutOfSync: the comparison after it may be missing", statusOf(synccommon.OperationSucceeded, argov1alpha1.SyncStatusCodeOutOfSync), true},
		{"succeeded and Synced", statusOf(synccommon.OperationSucceeded, argov1alpha1.SyncStatusCodeSynced), false},
		{"succeeded, sync Unknown: RollingSync only syncs OutOfSync", statusOf(synccommon.OperationSucceeded, argov1alpha1.SyncStatusCodeUnknown), false},
		{"failed and OutOfSync: a retry is a new request", statusOf(synccommon.OperationFailed, argov1alpha1.SyncStatusCodeOutOfSync), false},
		{"errored and OutOfSync", statusOf(synccommon.OperationError, argov1alpha1.SyncStatusCodeOutOfSync), false},
		{"no operation state", statusOf("", argov1alpha1.SyncStatusCodeOutOfSync), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := awaitingComparison(tc.status); got != tc.want {
				t.Errorf("awaitingComparison = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComparisonWaits(t *testing.T) {
	key := types.NamespacedName{Namespace: "argocd", Name: "guestbook"}
	other := types.NamespacedName{Namespace: "argocd", Name: "other"}
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	outOfSync := statusOf(synccommon.OperationSucceeded, argov1alpha1.SyncStatusCodeOutOfSync)
	synced := statusOf(synccommon.OperationSucceeded, argov1alpha1.SyncStatusCodeSynced)

	t.Run("kept for the grace from the first time it awaits, then goes", func(t *testing.T) {
		w := newComparisonWaits(10 * time.Second)
		if got := w.remaining(key, "a", outOfSync, t0); got != 10*time.Second {
			t.Errorf("first look: %v left, want 10s", got)
		}
		if got := w.next(key, t0.Add(4*time.Second)); got != 6*time.Second {
			t.Errorf("next: %v, want 6s", got)
		}
		if got := w.next(other, t0); got != 0 {
			t.Errorf("next of an Application without a wait: %v, want 0", got)
		}
		if got := w.remaining(key, "a", outOfSync, t0.Add(7*time.Second)); got != 3*time.Second {
			t.Errorf("7s later: %v left, want 3s", got)
		}
		if got := w.remaining(key, "a", outOfSync, t0.Add(10*time.Second)); got != 0 {
			t.Errorf("at the end of the grace: %v left, want 0", got)
		}
		if got := w.next(key, t0.Add(10*time.Second)); got != 0 {
			t.Errorf("a wait that ended is still scheduled: %v", got)
		}
		if got := w.remaining(key, "a", outOfSync, t0.Add(30*time.Second)); got != 0 {
			t.Errorf("a later look started the grace again: %v left", got)
		}
	})
	t.Run("the comparison ends the wait at once", func(t *testing.T) {
		w := newComparisonWaits(10 * time.Second)
		w.remaining(key, "a", outOfSync, t0)
		if got := w.remaining(key, "a", synced, t0.Add(time.Second)); got != 0 {
			t.Errorf("Synced: %v left, want 0", got)
		}
		if got := w.next(key, t0.Add(time.Second)); got != 0 {
			t.Errorf("the ended wait is still scheduled: %v", got)
		}
	})
	t.Run("another request starts its own grace", func(t *testing.T) {
		w := newComparisonWaits(10 * time.Second)
		w.remaining(key, "a", outOfSync, t0)
		if got := w.remaining(key, "b", outOfSync, t0.Add(8*time.Second)); got != 10*time.Second {
			t.Errorf("request b: %v left, want a grace of its own", got)
		}
	})
	t.Run("forgotten, nothing is scheduled and the next wait starts afresh", func(t *testing.T) {
		w := newComparisonWaits(10 * time.Second)
		w.remaining(key, "a", outOfSync, t0)
		w.forget(key)
		if got := w.remaining(key, "a", outOfSync, t0.Add(20*time.Second)); got != 10*time.Second {
			t.Errorf("after forget: %v left, want 10s", got)
		}
		w.forget(key)
		if got := w.next(key, t0); got != 0 {
			t.Errorf("forgotten wait still scheduled: %v", got)
		}
	})
}
