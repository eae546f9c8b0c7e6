// Package retry is how the agent's controllers back off after a failed write (a report,
// a ManagedClusterAddOn condition, a hub request on an Application).
package retry

import "time"

// The delays of a failed write's retries: exponential per object, so an outage costs a
// few requests a minute, never a busy loop, and the queue keeps every object until its
// write succeeds.
const (
	BaseDelay = 500 * time.Millisecond
	MaxDelay  = 2 * time.Minute
)
