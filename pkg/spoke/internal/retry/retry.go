// Package retry is how the agent's controllers back off after a failed write (a report,
// a ManagedClusterAddOn condition, a hub request on an Application), and how the agent
// spreads its retries in time.
package retry

import (
	"math/rand/v2"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// The delays of a failed write's retries: exponential per object, so an outage costs a
// few requests a minute, never a busy loop, and the queue keeps every object until its
// write succeeds. MaxDelay is the longest any retry waits, jitter included.
const (
	BaseDelay = 500 * time.Millisecond
	MaxDelay  = 2 * time.Minute
)

// JitterFactor is the most a delay grows at random, as a fraction of it. Every agent of a
// fleet sees a hub outage start at the same moment, so without jitter their retries, each
// doubling from the same start, would keep arriving together; with it, they drift apart
// by up to half a delay at every step. Jitter only lengthens a delay, so no retry comes
// sooner than its exponential schedule says.
const JitterFactor = 0.5

// Jitter returns d lengthened by up to JitterFactor of d, at random: rnd returns a number
// in [0, 1), as rand.Float64 does.
func Jitter(d time.Duration, rnd func() float64) time.Duration {
	return d + time.Duration(JitterFactor*rnd()*float64(d))
}

// NewRateLimiter is the rate limiter of an agent controller's work queue: an item's retry
// waits BaseDelay doubled per failure of that item, with Jitter, never more than MaxDelay.
func NewRateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return newRateLimiter[T](rand.Float64)
}

func newRateLimiter[T comparable](rnd func() float64) workqueue.TypedRateLimiter[T] {
	// The exponential part stops where its jitter can just reach MaxDelay.
	capped := time.Duration(float64(MaxDelay) / (1 + JitterFactor))
	return &jittered[T]{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[T](BaseDelay, capped),
		rnd:              rnd,
	}
}

// jittered is a rate limiter whose delays are its inner limiter's with Jitter.
type jittered[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	rnd func() float64
}

func (j *jittered[T]) When(item T) time.Duration {
	return Jitter(j.TypedRateLimiter.When(item), j.rnd)
}

// Spread returns a delay in [0, most), at random: how long one agent of a fleet waits so
// that the fleet's requests arrive over most instead of at once.
func Spread(most time.Duration, rnd func() float64) time.Duration {
	return time.Duration(rnd() * float64(most))
}
