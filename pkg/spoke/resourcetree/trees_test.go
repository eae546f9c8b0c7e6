package resourcetree

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

func TestResourceTreesCondition(t *testing.T) {
	refused := errors.New("reading from Redis at 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused")
	a, b := types.NamespacedName{Namespace: "argocd", Name: "a"}, types.NamespacedName{Namespace: "argocd", Name: "b"}
	tests := map[string]struct {
		reads      []error // of a, then b, alternately
		wantStatus metav1.ConditionStatus
		wantReason string
		wantRetry  int
	}{
		"no read: no condition":                    {},
		"a read worked":                            {reads: []error{nil}, wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceTreeRead},
		"a read failed: False with the error":      {reads: []error{refused}, wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceTreeUnreadable},
		"failed, then another worked: True, retry": {reads: []error{refused, nil}, wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceTreeRead, wantRetry: 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			trees := NewTrees(nil, "argocd", DefaultRedisSecret, "127.0.0.1:1", "gzip")
			// Two controllers read trees: each gets every retry.
			reportRetries, treeRetries := trees.Retries(), trees.Retries()
			for i, err := range tt.reads {
				key := a
				if i%2 == 1 {
					key = b
				}
				trees.record(key, err)
			}
			cond := trees.Condition()
			if tt.wantReason == "" {
				if cond != nil {
					t.Fatalf("condition = %+v, want none", cond)
				}
				return
			}
			if cond == nil || cond.Type != apps.ConditionResourceTreeReadable || cond.Status != tt.wantStatus || cond.Reason != tt.wantReason {
				t.Fatalf("condition = %+v, want %s %s", cond, tt.wantStatus, tt.wantReason)
			}
			if cond.Status == metav1.ConditionFalse && cond.Message != fmt.Sprintf("Cannot read Argo CD's resource tree: %v. Reports are written "+
				"without per-resource health (resourceHealthSource: appTree) until it can be read.", refused) {
				t.Errorf("message %q does not carry the error", cond.Message)
			}
			for range tt.wantRetry {
				for _, retries := range []<-chan event.GenericEvent{reportRetries, treeRetries} {
					if e := <-retries; e.Object.GetName() != a.Name {
						t.Errorf("retry of %s, want %s", e.Object.GetName(), a.Name)
					}
				}
			}
		})
	}
}

func TestResourceTreesBackOffAfterRedisUnreachable(t *testing.T) {
	// A Redis that accepts connections and never answers: every read times out.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer conn.Close()
		}
	}()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: DefaultRedisSecret}, Data: map[string][]byte{"auth": []byte("pw")}}
	trees := NewTrees(fake.NewClientBuilder().WithObjects(secret).Build(), "argocd", DefaultRedisSecret, silent.Addr().String(), "gzip")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	trees.now = func() time.Time { return now }
	app := func(name string) *argov1alpha1.Application {
		return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}}
	}

	if tree := trees.Tree(context.Background(), app("a")); tree != nil {
		t.Fatalf("tree from a Redis that never answers: %+v", tree)
	}
	first := accepted.Load()
	if first == 0 {
		t.Fatal("the first read did not connect")
	}
	if cond := trees.Condition(); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Fatalf("condition after a timed-out read = %+v, want False", cond)
	}
	// Within the back-off another Application's read fails at once, without connecting.
	if tree := trees.Tree(context.Background(), app("b")); tree != nil {
		t.Fatalf("tree within the back-off: %+v", tree)
	}
	if got := accepted.Load(); got != first {
		t.Errorf("connections after a read within the back-off = %d, want %d", got, first)
	}
	// After it, the next read tries Redis again.
	now = now.Add(unreachableBackoff)
	trees.Tree(context.Background(), app("c"))
	if got := accepted.Load(); got == first {
		t.Errorf("no new connection after the back-off")
	}
}
