//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// selfCheck proves each invariant can fail: on a converged fleet it changes the model
// (never the fleet) so that it disagrees in one way, and requires check to name the
// invariant that covers it. The model and the records are restored afterwards.
func (h *harness) selfCheck(ctx context.Context) error {
	set := h.m.sets[0]
	cluster := h.m.clusters[0]
	cases := []struct {
		name   string
		want   string
		change func() (undo func())
	}{
		{"a pulled Application the hub does not have", "works", func() func() {
			h.m.apps = append(h.m.apps, &standaloneApp{name: "phantom", cluster: cluster, marked: true, epoch: 1})
			return func() { h.m.apps = h.m.apps[:len(h.m.apps)-1] }
		}},
		{"a cluster the ApplicationSets' Placement no longer decides on", "clusters", func() func() {
			h.m.excluded[cluster] = true
			return func() { delete(h.m.excluded, cluster) }
		}},
		{"another revision of an ApplicationSet", "reports", func() func() {
			was := set.src
			set.src.rev = (was.rev + 1) % revisions
			return func() { set.src = was }
		}},
		{"a typo the hub does not report", "status", func() func() {
			was := set.exists
			set.exists = false
			h.m.apps = append(h.m.apps, &standaloneApp{name: appSetAppName(cluster, set.name), cluster: cluster, marked: true,
				broken: breakLabel, src: source{path: guestbookPaths[0]}, epoch: 1})
			return func() { set.exists = was; h.m.apps = h.m.apps[:len(h.m.apps)-1] }
		}},
		{"objects that were recreated", "kept", func() func() {
			saved := maps.Clone(h.observed)
			for k, o := range h.observed {
				o.guestbookUID += "-before"
				h.observed[k] = o
			}
			lost := maps.Clone(h.figs.lostObjects)
			return func() { h.observed = saved; h.figs.lostObjects = lost }
		}},
	}
	if len(h.observed) == 0 {
		return fmt.Errorf("self-check: nothing was recorded as running on the clusters")
	}
	for _, c := range cases {
		undo := c.change()
		violations, err := h.check(ctx)
		undo()
		if err != nil {
			return fmt.Errorf("self-check %q: %w", c.name, err)
		}
		if !slices.ContainsFunc(violations, func(v violation) bool { return v.invariant == c.want }) {
			return fmt.Errorf("self-check: the invariants did not catch %s (want a %q violation, got %v)", c.name, c.want, violations)
		}
		h.out("self-check: %s caught by %q (%d violations)", c.name, c.want, len(violations))
	}
	// The fleet itself is unchanged: it must still pass.
	if violations, err := h.check(ctx); err != nil || len(violations) > 0 {
		return fmt.Errorf("self-check: the restored model no longer matches the fleet: %v %v", violations, err)
	}
	return nil
}
