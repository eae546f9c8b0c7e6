//go:build e2e

package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

var (
	flagOps        = flag.Int("ops", 100, "operations to run")
	flagSeed       = flag.Uint64("seed", 0, "seed of the operation sequence; 0: one from the clock (printed)")
	flagQuietEvery = flag.Int("quiet-every", 25, "operations between quiet periods (invariants checked)")
	flagFaultEvery = flag.Int("fault-every", 12, "every n-th operation is a fault, the kinds in a seeded order; 0: no faults")
	flagFaultKinds = flag.String("faults", "agent,manager,apiserver,addon,link", "the fault kinds to inject, in a seeded order: agent (SIGKILL), manager (SIGKILL the leader), apiserver (hub outage), addon (disable, enable), link (cut an agent off the hub)")
	flagBound      = flag.Duration("convergence-bound", 4*time.Minute, "how long after a quiet period begins every invariant must hold")
)

func TestMain(m *testing.M) {
	os.Exit(fleet.RunInPrivateNetNS(m))
}

func TestChaos(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) % 1_000_000
	}
	fmt.Printf("chaos: seed %d, %d operations; replay with: make chaos CHAOS_ARGS='--ops %d --seed %d'\n", seed, *flagOps, *flagOps, seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dir, err := os.MkdirTemp("", "chaos-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("chaos: fleet directory (logs): %s\n", dir)
	if err := fleet.KlogToFile(filepath.Join(dir, "ocm.log")); err != nil {
		t.Fatal(err)
	}
	// The harness's own clients log nothing worth reading.
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	pf, err := fleet.StartPullFleet(ctx, fleet.PullFleetOptions{
		Fleet: fleet.FleetOptions{
			Clusters: 3, Dir: dir, WorkStatusSyncInterval: 5 * time.Second,
			AddOnLeaseDurationSeconds: addonLeaseDurationSeconds, AddOnLeaseSyncInterval: addonLeaseSyncInterval,
		},
		PullModel: fleet.PullModelOptions{ManagerReplicas: 2, AgentHubProxy: true, RestartExited: true},
		AppResync: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("starting the fleet: %v", err)
	}
	passed := false
	defer func() {
		if !passed {
			dumpLogs(pf)
		}
		if err := pf.Stop(); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
		if passed && os.Getenv("CHAOS_KEEP_DIR") == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Printf("chaos: the fleet directory %s keeps every process's log\n", dir)
		}
	}()
	fmt.Printf("chaos: fleet up in %s\n", time.Since(start).Round(time.Second))

	hubClient, err := unthrottled(pf.Hub.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		pf: pf, hub: hubClient, spokes: map[string]client.Client{},
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed,
		log: &opLog{}, figs: newFigures(), observed: map[string]observation{},
		out: func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
	}
	h.faults = &faultRunner{}
	var clusters []string
	for _, c := range pf.Clusters {
		clusters = append(clusters, c.Name)
		if h.spokes[c.Name], err = unthrottled(c.ControlPlane); err != nil {
			t.Fatal(err)
		}
	}
	h.m = newModel(clusters, appSetNames)
	if err := h.setUpHub(ctx, dir); err != nil {
		t.Fatalf("setting up the hub: %v", err)
	}
	if err := h.quiet(ctx, 0); err != nil {
		t.Fatalf("the ApplicationSets' first Applications: %v", err)
	}
	// A harness whose checks cannot fail proves nothing: each invariant must catch a
	// model that disagrees with the fleet.
	if err := h.selfCheck(ctx); err != nil {
		t.Fatal(err)
	}
	runErr := h.run(ctx, *flagOps)

	conflicts, err := pf.Hub.Audit.Answered(409)
	if err != nil {
		t.Errorf("reading the hub's audit log: %v", err)
	}
	var checkViolations []violation
	var failed *failedCheck
	if errors.As(runErr, &failed) {
		checkViolations = failed.violations
	}
	h.figs.print(os.Stdout, summary{
		seed: seed, ops: *flagOps, elapsed: time.Since(start), restarts: pf.Pull.Restarts(),
		conflicts: conflicts, checkViolations: checkViolations,
	})
	if runErr != nil {
		t.Fatalf("seed %d: %v", seed, runErr)
	}
	if len(h.figs.violations) > 0 || len(h.figs.lostObjects) > 0 {
		t.Fatalf("seed %d: %d violations, %d deliveries lost objects (above)", seed, len(h.figs.violations), len(h.figs.lostObjects))
	}
	refused, err := pf.Pull.RefusedManagerRequests()
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Fatalf("requests of the manager the hub refused under the chart's RBAC: %v", refused)
	}
	passed = true
}

// unthrottled is an admin client of cp without client-go's default 5 requests a second:
// a check reads every object of four API servers, twice a second.
func unthrottled(cp *fleet.ControlPlane) (client.Client, error) {
	cfg := rest.CopyConfig(cp.APIServer.Config)
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: cp.APIServer.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cp.Name, err)
	}
	return c, nil
}

// failedCheck is a quiet period whose invariants did not all hold within the bound.
type failedCheck struct {
	violations []violation
	log        string
}

func (f *failedCheck) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d invariant violations after the convergence bound:\n", len(f.violations))
	for _, v := range f.violations {
		fmt.Fprintf(&b, "  - %s\n", v)
	}
	fmt.Fprintf(&b, "operations since the last good check:\n%s", f.log)
	return b.String()
}

// run does n operations, every *flagFaultEvery-th a fault, with a quiet period every
// *flagQuietEvery and at the end.
func (h *harness) run(ctx context.Context, n int) error {
	kinds, err := faultKindsNamed(*flagFaultKinds)
	if err != nil {
		return err
	}
	schedule := h.rng.Perm(len(kinds))
	faultsDone := 0
	for i := 1; i <= n; i++ {
		var o op
		if *flagFaultEvery > 0 && len(kinds) > 0 && i%*flagFaultEvery == 0 {
			o = h.faultOp(kinds[schedule[faultsDone%len(kinds)]])
			faultsDone++
		} else {
			o = h.nextAppOp()
		}
		pause := time.Duration(500+h.rng.IntN(1501)) * time.Millisecond
		h.out("%s", h.log.add("op %d: %s: %s", i, o.kind, o.desc))
		if err := o.do(ctx); err != nil {
			h.log.add("op %d failed: %v", i, err)
			return fmt.Errorf("operation %d (%s: %s): %w\noperations since the last good check:\n%s", i, o.kind, o.desc, err, h.log)
		}
		h.figs.mu.Lock()
		h.figs.ops[o.kind]++
		h.figs.mu.Unlock()
		if err := sleep(ctx, pause); err != nil {
			return err
		}
		if i%*flagQuietEvery == 0 || i == n {
			if err := h.quiet(ctx, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// quiet waits for the running fault to end, then for every invariant to hold.
func (h *harness) quiet(ctx context.Context, afterOp int) error {
	if err := h.faults.wait(ctx); err != nil {
		return fmt.Errorf("fault: %w\noperations since the last good check:\n%s", err, h.log)
	}
	start := time.Now()
	var last []violation
	var lastErr error
	err := waitFor(ctx, *flagBound, "every invariant to hold", func(ctx context.Context) (bool, error) {
		if err := h.pf.Err(); err != nil {
			return false, err
		}
		violations, err := h.check(ctx)
		if lastErr = err; err != nil {
			// Keep what the last complete read found.
			return false, nil
		}
		last = violations
		return len(last) == 0, nil
	})
	if err != nil {
		if lastErr != nil {
			last = append(last, violation{"read", lastErr.Error()})
		}
		return &failedCheck{violations: last, log: h.log.String() + "\n(" + err.Error() + ")"}
	}
	took := time.Since(start)
	for _, a := range h.m.apps {
		a.settled = true
	}
	for _, s := range h.m.sets {
		s.settled = true
	}
	if afterOp > 0 {
		h.figs.addDuration(&h.figs.convergence, took)
		h.figs.mu.Lock()
		h.figs.checksPassed++
		h.figs.mu.Unlock()
	}
	h.out("quiet after op %d: every invariant holds for %d pulled Applications (after %s)", afterOp, len(h.m.expected()), took.Round(100*time.Millisecond))
	h.log.reset()
	return nil
}

// dumpLogs prints the tails of our processes' logs and of Argo CD's.
func dumpLogs(pf *fleet.PullFleet) {
	for _, f := range pf.Logs() {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Printf("---- %s ----\n%s\n", f, strings.Join(lines, "\n"))
	}
}
