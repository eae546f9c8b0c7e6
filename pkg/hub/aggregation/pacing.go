package aggregation

import (
	"sync"
	"time"
)

// reportBytesPerSecond bounds how fast the controller writes reports, all of them
// together: after a write of n bytes of statuses, the next write of any report waits until
// n/reportBytesPerSecond after the earlier writes' turn. What a write costs the API server
// follows its size. While a fleet's Applications are being created or report for the
// first time every entry needs attention, and the report of a large fleet is large:
// written after every change by several workers, such reports slowed propagation and the
// fan-in down (docs/benchmarks.md, "What the figures decided"). A settled
// fleet's reports are small and wait moments; after a report at its size bound the next
// write waits about two seconds, and the changes that arrive meanwhile are carried by the
// next write together.
const reportBytesPerSecond = 512 << 10

// writePacing is the earliest time of the next report write.
type writePacing struct {
	mu   sync.Mutex
	next time.Time
}

// wait is how long the next report write must still wait at now; 0 when it may be made.
func (p *writePacing) wait(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.next) {
		return 0
	}
	return p.next.Sub(now)
}

// wrote records that a report with statuses of the given size was written at now.
func (p *writePacing) wrote(now time.Time, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = later(p.next, now).Add(time.Duration(float64(bytes) / reportBytesPerSecond * float64(time.Second)))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
