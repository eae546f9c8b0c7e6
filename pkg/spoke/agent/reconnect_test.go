package agent

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestUnreachable(t *testing.T) {
	gr := schema.GroupResource{Group: "apps.open-cluster-management.io", Resource: "applicationstatusreports"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection refused", &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: syscall.ECONNREFUSED}, true},
		{"wrapped network error", errors.Join(errors.New("applying report"), syscall.ECONNRESET), true},
		{"unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), true},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), true},
		{"forbidden answers", apierrors.NewForbidden(gr, "r", errors.New("no")), false},
		{"invalid answers", apierrors.NewInvalid(schema.GroupKind{Kind: "ApplicationStatusReport"}, "r", nil), false},
		{"conflict answers", apierrors.NewConflict(gr, "r", errors.New("changed")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreachable(tc.err); got != tc.want {
				t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// The reconnect probes only while a report waits for the hub, then retries exactly the
// reports that found it unreachable and renews the lease once.
func TestHubReconnectRetriesWaitingReportsWhenTheHubAnswers(t *testing.T) {
	var probes, renewals atomic.Int32
	hubDown := atomic.Bool{}
	hubDown.Store(true)
	r := newHubReconnect(func(context.Context) error {
		probes.Add(1)
		if hubDown.Load() {
			return syscall.ECONNREFUSED
		}
		return apierrors.NewNotFound(schema.GroupResource{Resource: "managedclusteraddons"}, "argocd-pull")
	}, func() { renewals.Add(1) }, 0)
	r.interval = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Start(ctx) }()

	time.Sleep(50 * time.Millisecond)
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes while no report waited", n)
	}
	gr := schema.GroupResource{Resource: "applicationstatusreports"}
	down := types.NamespacedName{Namespace: "argocd", Name: "down"}
	refused := types.NamespacedName{Namespace: "argocd", Name: "refused"}
	settled := types.NamespacedName{Namespace: "argocd", Name: "settled"}
	r.Failed(down, &url.Error{Op: "Patch", Err: syscall.ECONNREFUSED})
	r.Failed(refused, apierrors.NewForbidden(gr, "r", errors.New("no")))
	r.Failed(settled, syscall.ECONNRESET)
	r.Settled(settled)

	deadline := time.Now().Add(5 * time.Second)
	for probes.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := renewals.Load(); n != 0 {
		t.Fatalf("renewed the lease %d times while the hub did not answer", n)
	}
	hubDown.Store(false)
	select {
	case e := <-r.retry:
		if got := (types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}); got != down {
			t.Fatalf("retried %v, want %v", got, down)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no retry after the hub answered")
	}
	deadline = time.Now().Add(5 * time.Second)
	for renewals.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := renewals.Load(); n != 1 {
		t.Fatalf("renewed the lease %d times, want once", n)
	}
	// Nothing waits any more: no other retry, and no more probes.
	after := probes.Load()
	time.Sleep(100 * time.Millisecond)
	select {
	case e := <-r.retry:
		t.Fatalf("retried %s/%s too, which did not wait for the hub", e.Object.GetNamespace(), e.Object.GetName())
	default:
	}
	if n := probes.Load(); n != after {
		t.Fatalf("%d more probes with nothing waiting", n-after)
	}
}

// Once the hub answers, the retries wait the part of the jitter the random source draws:
// never before it, whatever the load.
func TestHubReconnectWaitsItsJitterAfterTheHubAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jitter time.Duration
		rand   float64
		// atLeast is how long after the probe that found the hub the retry may come.
		atLeast time.Duration
	}{
		{"no jitter: at once", 0, 0.9, 0},
		{"nothing drawn: at once, not after the hour of jitter", time.Hour, 0, 0},
		{"a quarter drawn: a quarter of the jitter", 800 * time.Millisecond, 0.25, 200 * time.Millisecond},
		{"most drawn: almost the whole jitter", 400 * time.Millisecond, 0.99, 396 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answered atomic.Int64
			r := newHubReconnect(func(context.Context) error {
				answered.CompareAndSwap(0, time.Now().UnixNano())
				return nil
			}, func() {}, tc.jitter)
			r.interval = time.Millisecond
			r.rand = func() float64 { return tc.rand }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = r.Start(ctx) }()

			r.Failed(types.NamespacedName{Namespace: "argocd", Name: "app"}, syscall.ECONNREFUSED)
			select {
			case <-r.retry:
				after := time.Since(time.Unix(0, answered.Load()))
				if after < tc.atLeast {
					t.Errorf("retried %s after the hub answered, want at least %s", after, tc.atLeast)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no retry after the hub answered")
			}
		})
	}
}

func TestLeaseRenewerStartsTheUpdaterAgainOnRenew(t *testing.T) {
	var starts atomic.Int32
	l := newLeaseRenewer(func(ctx context.Context) {
		starts.Add(1)
		<-ctx.Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	waitCount := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for starts.Load() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := starts.Load(); n != want {
			t.Fatalf("the updater started %d times, want %d", n, want)
		}
	}
	waitCount(1)
	l.renew()
	waitCount(2)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := starts.Load(); n != 2 {
		t.Fatalf("the updater started %d times after the end, want 2", n)
	}
}
