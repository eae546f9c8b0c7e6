//go:build e2e

package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// figures are what a run prints at the end. Faults run in the background, so every
// field is behind mu.
type figures struct {
	mu sync.Mutex
	// ops counts operations by kind, faults included.
	ops map[opKind]int
	// Faults done, by kind.
	agentKills, managerKills, outages, addonToggles, linkCuts int
	// cutsBehind counts link cuts after which the hub's reports had changes to catch up.
	cutsBehind int
	// takeovers: SIGKILL of the leader -> another replica leads; acquiredAfterExpiry: the
	// killed leader's Lease expired (last renewal + duration) -> the other acquired it.
	takeovers, acquiredAfterExpiry []time.Duration
	// outageDurations: API server stopped -> serving again.
	outageDurations []time.Duration
	// flaggedAfter: link cut -> addon unavailable on the hub; flaggedAfterRenewal: the
	// agent's last Lease renewal -> unavailable.
	flaggedAfter, flaggedAfterRenewal []time.Duration
	// freshAfterLink: link restored -> the cluster's reports fresh; availableAfterLink:
	// -> its addon available again.
	freshAfterLink, availableAfterLink []time.Duration
	// convergence: last operation of a batch (and its fault) -> every invariant holds.
	convergence []time.Duration
	// checksPassed counts quiet periods whose invariants all held.
	checksPassed int
	// violations are the faults' own findings (never flagged, never fresh, no takeover);
	// failed checks end the run and are printed there.
	violations []string
	// lostObjects: delivery epoch -> what was lost.
	lostObjects map[string]string
}

func newFigures() *figures {
	return &figures{ops: map[opKind]int{}, lostObjects: map[string]string{}}
}

func (f *figures) count(n *int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*n++
}

func (f *figures) addDuration(list *[]time.Duration, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*list = append(*list, d)
}

func (f *figures) violation(text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violations = append(f.violations, text)
}

// percentiles is "p50 / p99 / max" of ds (nearest rank), or "none".
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	r := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	return fmt.Sprintf("p50 %s / p99 %s / max %s (n=%d)", r(rank(0.5)), r(rank(0.99)), r(s[len(s)-1]), len(s))
}

// summary is what the run prints at its end.
type summary struct {
	seed      uint64
	ops       int
	elapsed   time.Duration
	restarts  map[string]int
	conflicts map[string]int
	// checkViolations are the violations of the check that ended the run, if one did.
	checkViolations []violation
}

func (f *figures) print(w io.Writer, s summary) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "\n== chaos figures: seed %d, %d operations in %s ==\n", s.seed, s.ops, s.elapsed.Round(time.Second))
	var kinds []string
	for k, n := range f.ops {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "operations by kind:        %s\n", strings.Join(kinds, ", "))
	fmt.Fprintf(w, "faults injected:           agent SIGKILL %d, manager leader SIGKILL %d, hub API server outages %d, addon disable/enable %d, agent link cuts %d\n",
		f.agentKills, f.managerKills, f.outages, f.addonToggles, f.linkCuts)
	fmt.Fprintf(w, "convergence after the last operation of each quiet period: %s\n", percentiles(f.convergence))
	fmt.Fprintf(w, "quiet periods with every invariant held: %d\n", f.checksPassed)
	var per []string
	for _, name := range invariantNames {
		n := 0
		for _, v := range s.checkViolations {
			if v.invariant == name {
				n++
			}
		}
		per = append(per, fmt.Sprintf("%s %d", name, n))
	}
	per = append(per, fmt.Sprintf("faults %d", len(f.violations)))
	violations := len(f.violations) + len(s.checkViolations)
	fmt.Fprintf(w, "invariant violations:      %d (%s)\n", violations, strings.Join(per, ", "))
	for _, v := range f.violations {
		fmt.Fprintf(w, "  - %s\n", v)
	}
	managerRestarts := f.managerKills
	var restarted []string
	for _, name := range slices.Sorted(maps.Keys(s.restarts)) {
		restarted = append(restarted, fmt.Sprintf("%s %d", name, s.restarts[name]))
		if strings.HasPrefix(name, "manager") {
			managerRestarts += s.restarts[name]
		}
	}
	fmt.Fprintf(w, "manager restarts survived: %d (%d SIGKILLed leaders; exits restarted as a kubelet would: %s)\n",
		managerRestarts, f.managerKills, orNone(restarted))
	fmt.Fprintf(w, "API server outages survived: %d, down for %s\n", f.outages, percentiles(f.outageDurations))
	fmt.Fprintf(w, "leader takeover after SIGKILL (lease %s): %s; Lease acquired after the killed leader's expired: %s\n",
		leaderLeaseDuration, percentiles(f.takeovers), percentiles(f.acquiredAfterExpiry))
	fmt.Fprintf(w, "agent cut off the hub -> addon unavailable: after the cut %s; after the agent's last Lease renewal %s (window %s, looked at every %s)\n",
		percentiles(f.flaggedAfter), percentiles(f.flaggedAfterRenewal), addonLeaseWindow, addonLeaseSyncInterval)
	fmt.Fprintf(w, "link restored -> the cluster's reports fresh: %s (%d of %d cuts had changes to catch up); -> addon available: %s\n",
		percentiles(f.freshAfterLink), f.cutsBehind, f.linkCuts, percentiles(f.availableAfterLink))
	var conflicts []string
	for _, verb := range slices.Sorted(maps.Keys(s.conflicts)) {
		conflicts = append(conflicts, fmt.Sprintf("%s %d", verb, s.conflicts[verb]))
	}
	fmt.Fprintf(w, "manager requests answered 409 Conflict (hub audit log, all replicas): %s\n", orNone(conflicts))
	fmt.Fprintf(w, "objects lost:              %d\n", len(f.lostObjects))
	for _, k := range slices.Sorted(maps.Keys(f.lostObjects)) {
		fmt.Fprintf(w, "  - %s: %s\n", k, f.lostObjects[k])
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// opLog keeps the operations since the last quiet period whose invariants held, for the
// report of a violation.
type opLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *opLog) add(format string, args ...any) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	l.entries = append(l.entries, line)
	return line
}

func (l *opLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

func (l *opLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.entries, "\n")
}
