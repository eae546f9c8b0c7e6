//go:build e2e

// Package chaos is the chaos harness: on a real fleet (test/fleet: a hub and three
// clusters with real OCM and Argo CD, our manager as two leader-electing replicas and an
// agent per cluster, all processes), a seeded random sequence of what operators and
// failures do at once: pulled Applications created, updated, retargeted, unmarked and
// re-marked, broken with a typo and fixed, deleted with and without Argo CD's resources
// finalizer; clusters in and out of the ApplicationSets' Placement; ApplicationSets
// updated, deleted and recreated; and faults: an agent or the manager leader SIGKILLed,
// the hub API server stopped and started on the same etcd, the addon disabled and
// enabled, an agent's link to the hub cut. After every quiet period and at the end the
// invariants (invariants.go) must hold within the convergence bound; the run ends with
// its figures.
//
// Run it with `make chaos` (CHAOS_ARGS='--ops 500 --seed N'); `make test` runs a short
// one. The seed is printed first: the same seed replays the same operations. A violation
// fails the run with the operations since the last good check, the seed and the objects
// involved; the fleet's directory keeps every process's log.
package chaos
