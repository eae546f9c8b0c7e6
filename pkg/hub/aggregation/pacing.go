package aggregation

import (
	"sync"
	"time"
)

// reportBytesPerSecond bounds how fast the controller writes reports, all of them
// together: after a write of n bytes of statuses, the next write of any report waits until
// n/reportBytesPerSecond after the earlier writes' turn. What a write costs the API server
// follows its size. While a fleet's Applications are being created or report for the
// first time every entry needs attention, and a report of a thousand clusters is hundreds
// of KiB: written after every change by four workers, such reports slowed propagation from
// 183 to 134 Applications/s and the fan-in from 2m46s to 3m48s at a thousand clusters
// (docs/benchmarks.md). One worker wrote about 0.6 MiB/s then. A settled fleet's reports
// are a few KiB each and wait a few milliseconds; after a full one (1 MiB) the next waits
// 2 s, and the changes that arrive meanwhile are carried by the next write together.
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
