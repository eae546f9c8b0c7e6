package agent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The addon Lease as addon-framework's lease updater (pkg/lease) keeps it: renewed every
// 60 s with a jitter of up to 25 %, created with a duration of 60 s. The registration
// agent on the cluster reads its renew time to set the ManagedClusterAddOn's Available
// condition.
const (
	DefaultLeasePeriod   = 60 * time.Second
	leaseJitterFactor    = 0.25
	leaseDurationSeconds = 60
)

// Outcomes of one run of the lease updater, the values of the lease metric's label.
const (
	leaseRenewed         = "renewed"
	leaseCachesNotSynced = "informers_not_synced"
	leaseHubUnreachable  = "hub_unreachable"
	leaseWriteFailed     = "write_failed"
)

// leaseCheck is one condition of a renewal; outcome names it when it fails.
type leaseCheck struct {
	outcome string
	ok      func() bool
}

// leaseUpdater is addon-framework's lease updater with two differences: its period can
// be set (the framework's is a constant, and a test cannot wait minutes to see a renewal
// withheld and resumed), and it counts its outcomes, so an operator sees why the addon
// turned unavailable and a test sees that the updater ran.
type leaseUpdater struct {
	leases    coordinationv1client.LeasesGetter
	name      string
	namespace string
	period    time.Duration
	// checks run in order before each renewal; the first that fails stops it.
	checks []leaseCheck
	now    func() time.Time
}

func newLeaseUpdater(leases coordinationv1client.LeasesGetter, name, namespace string, period time.Duration, checks ...leaseCheck) *leaseUpdater {
	if period <= 0 {
		period = DefaultLeasePeriod
	}
	return &leaseUpdater{leases: leases, name: name, namespace: namespace, period: period, checks: checks, now: time.Now}
}

// start renews the Lease at once, then every period (jittered), until ctx is done.
func (u *leaseUpdater) start(ctx context.Context) {
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) { u.renew(ctx) }, u.period, leaseJitterFactor, true)
}

// renew creates or renews the Lease if every check passes, and returns the outcome.
func (u *leaseUpdater) renew(ctx context.Context) string {
	outcome := leaseRenewed
	for _, c := range u.checks {
		if !c.ok() {
			outcome = c.outcome
			break
		}
	}
	if outcome == leaseRenewed {
		if err := u.write(ctx); err != nil {
			outcome = leaseWriteFailed
			ctrl.Log.WithName("agent").WithName("lease").Error(err, "Renewing the addon lease", "lease", klog.KRef(u.namespace, u.name))
		}
	}
	leaseUpdates.WithLabelValues(outcome).Inc()
	return outcome
}

// write sets the Lease's renew time to now, creating the Lease if there is none.
func (u *leaseUpdater) write(ctx context.Context) error {
	leases := u.leases.Leases(u.namespace)
	now := &metav1.MicroTime{Time: u.now()}
	lease, err := leases.Get(ctx, u.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		duration := int32(leaseDurationSeconds)
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: u.namespace, Name: u.name},
			Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &duration, RenewTime: now},
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating lease %s/%s: %w", u.namespace, u.name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading lease %s/%s: %w", u.namespace, u.name, err)
	}
	lease.Spec.RenewTime = now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing lease %s/%s: %w", u.namespace, u.name, err)
	}
	return nil
}
