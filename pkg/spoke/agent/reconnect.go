package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
)

// hubProbeInterval is how often the agent asks whether the hub answers again while a
// report write waits for it, before retry.Jitter.
const hubProbeInterval = time.Second

// hubReconnect notices the hub answering again after report writes failed because the
// hub could not be reached (an outage, a cut link), and then, after its jitter, retries
// every such report and renews the addon lease, instead of leaving each report to its
// exponential backoff (up to retry.MaxDelay) and the lease to the lease updater's next
// minute. The hub shows what changed on the cluster during the outage seconds after it
// is reachable.
//
// It probes only while such a write is outstanding: one read of the agent's own
// ManagedClusterAddOn every 1 to 1.5 s, nothing while the hub answers. Once the hub
// answers, it waits a random part of jitter before it retries, so that the agents of a
// fleet, which all lost the hub at once, come back to it spread over jitter.
type hubReconnect struct {
	// probe reads the hub with the agent's credentials; nil error or NotFound means it
	// answers.
	probe    func(ctx context.Context) error
	interval time.Duration
	// jitter is the most the retries wait after the hub answers; rand draws in [0, 1).
	jitter time.Duration
	rand   func() float64
	// renew renews the addon lease now.
	renew func()
	// retry gets the Applications to reconcile again (the report controller watches it).
	retry chan event.GenericEvent

	mu      sync.Mutex
	waiting map[types.NamespacedName]bool
	wake    chan struct{}
}

func newHubReconnect(probe func(ctx context.Context) error, renew func(), jitter time.Duration) *hubReconnect {
	return &hubReconnect{probe: probe, interval: hubProbeInterval, jitter: jitter, rand: rand.Float64, renew: renew,
		retry: make(chan event.GenericEvent, 64), waiting: map[types.NamespacedName]bool{}, wake: make(chan struct{}, 1)}
}

// unreachable tells whether err says the hub could not be reached at all (no answer, as
// opposed to an answer refusing the request), or answered it is unavailable for now.
func unreachable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err != nil
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err)
}

// Failed records that the report write of Application app failed with err; if the hub
// could not be reached, app is retried as soon as it answers again.
func (r *hubReconnect) Failed(app types.NamespacedName, err error) {
	if !unreachable(err) {
		return
	}
	r.mu.Lock()
	r.waiting[app] = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Settled records that app's report needs no retry any more.
func (r *hubReconnect) Settled(app types.NamespacedName) {
	r.mu.Lock()
	delete(r.waiting, app)
	r.mu.Unlock()
}

// Start probes the hub while reports wait for it, until ctx ends.
func (r *hubReconnect) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("agent").WithName("hub-reconnect")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		for r.pending() > 0 {
			if !sleep(ctx, retry.Jitter(r.interval, r.rand)) {
				return nil
			}
			probeCtx, cancel := context.WithTimeout(ctx, hubCheckTimeout)
			err := r.probe(probeCtx)
			cancel()
			if err != nil && !apierrors.IsNotFound(err) {
				continue
			}
			delay := retry.Spread(r.jitter, r.rand)
			log.V(2).Info("The hub answers again: waiting before retrying the reports that waited for it", "delay", delay)
			if !sleep(ctx, delay) {
				return nil
			}
			apps := r.take()
			log.Info("The hub answers again: retrying the reports that waited for it and renewing the addon lease", "reports", len(apps))
			hubReconnects.Inc()
			hubReconnectRetries.Add(float64(len(apps)))
			for _, app := range apps {
				select {
				case r.retry <- event.GenericEvent{Object: &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}}:
				case <-ctx.Done():
					return nil
				}
			}
			r.renew()
		}
	}
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Retries gets the Applications to reconcile again once the hub answers.
func (r *hubReconnect) Retries() <-chan event.GenericEvent { return r.retry }

func (r *hubReconnect) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}

// take returns and forgets the waiting Applications.
func (r *hubReconnect) take() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	apps := make([]types.NamespacedName, 0, len(r.waiting))
	for app := range r.waiting {
		apps = append(apps, app)
	}
	r.waiting = map[types.NamespacedName]bool{}
	return apps
}

// leaseRenewer runs addon-framework's lease updater and can make it renew now: the
// updater renews (after its health checks) when it starts, then every minute, so renewing
// now is starting it again.
type leaseRenewer struct {
	start func(ctx context.Context)
	now   chan struct{}
}

func newLeaseRenewer(start func(ctx context.Context)) *leaseRenewer {
	return &leaseRenewer{start: start, now: make(chan struct{}, 1)}
}

// renew asks for a renewal now; asks while one is pending are one.
func (l *leaseRenewer) renew() {
	select {
	case l.now <- struct{}{}:
	default:
	}
}

// Start runs the updater until ctx ends, starting it again on every renew.
func (l *leaseRenewer) Start(ctx context.Context) error {
	for {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.start(runCtx)
		}()
		select {
		case <-ctx.Done():
			cancel()
			<-done
			return nil
		case <-l.now:
			cancel()
			<-done
		}
	}
}
