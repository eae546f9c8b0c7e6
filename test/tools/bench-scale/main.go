// Command bench-scale is the scale benchmark (docs/benchmarks.md): one real hub kube-apiserver with
// simulated managed clusters, the real manager binary as a process of its own, and the
// figures docs/benchmarks.md records, printed as tables.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go run ./test/tools/bench-scale --clusters 100,300,1000 --appsets 10 --runs 3 --churn 50 --idle 60s
//
// Per size and run it starts a fresh hub API server (envtest, every CRD installed) and
// creates the fleet the OCM hub would hold: ManagedClusters with namespaces, argocd-pull
// ManagedClusterAddOns reported Available, the agents' hub Role and RoleBinding built by
// pkg/hub/addon, the chart's ClusterManagementAddOn. It starts `argocd-pull-addon manager`
// (built from this tree) against it, then measures these phases, each until the
// manager's writes stop:
//
//   - start-up: the manager's work on the existing fleet;
//   - propagation: ApplicationSets (no ApplicationSet controller runs) and, in one burst,
//     the Application it would render per cluster; create → ManifestWork seen through a
//     watch, p50/p99 and the time until every one exists;
//   - status fan-in: each simulated spoke writes the work agent's status feedback on its
//     ManifestWork and its agent's ApplicationStatusReport with the agent's own publishing
//     code (reports.PublishReport), impersonating the cluster's agent so hub RBAC applies;
//   - idle: nothing changes for --idle; the manager's writes should be 0;
//   - churn: --churn changes/s at random Applications (a new synced revision: the agent's
//     report, then the feedback) for --churn-duration; freshness is the time from the
//     report write to the MulticlusterApplicationSetReport showing the revision (watch).
//
// With --trees each change also sends the Application's resource tree as its agent does,
// and the manager writes the trees into a redis-server started for the run (trees.go).
//
// Manager CPU and peak RSS come from /proc/<pid>/stat and status (VmHWM, reset per phase
// through clear_refs), its API requests from its own rest_client_requests_total metric,
// kube-apiserver's and etcd's CPU from /proc. The load generator is this process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg      = config{settleQuiet: 5 * time.Second}
		sizes    = flag.String("clusters", "100,300,1000", "Comma-separated fleet sizes (managed clusters) to measure.")
		runs     = flag.Int("runs", 3, "Runs per size; figures are the median of the runs.")
		keep     = flag.Bool("keep", false, "Keep the work directory (kubeconfigs, manager logs).")
		workDir  = flag.String("work-dir", "", "Work directory; empty: a temporary one.")
		mgrFlags = flag.String("manager-args", "", "Extra arguments for `argocd-pull-addon manager`, space-separated (e.g. \"--kube-api-qps 100\").")
		mgrEnv   = flag.String("manager-env", "", "Extra environment of the manager process only, space-separated NAME=value (e.g. \"GOMEMLIMIT=512MiB\", as the chart sets it from the container's memory limit).")
	)
	flag.IntVar(&cfg.appSets, "appsets", 10, "ApplicationSets; each renders one Application per cluster.")
	flag.Float64Var(&cfg.churnRate, "churn", 50, "Status changes per second in the churn phase.")
	flag.StringVar(&cfg.churnKind, "churn-kind", churnSync, "What a churn change is: \"sync\" (a new revision, Progressing, then Healthy 2 s later: two changes) or \"revision\" (a new revision, Healthy throughout).")
	flag.Float64Var(&cfg.slowChurn, "slow-churn", 5, "Status changes per second in a second churn phase after the first (0: none).")
	flag.DurationVar(&cfg.churnFor, "churn-duration", 60*time.Second, "Length of the churn phase.")
	flag.DurationVar(&cfg.idle, "idle", 60*time.Second, "Length of the idle phase.")
	flag.BoolVar(&cfg.ownConnections, "own-connections", false, "Give each simulated spoke's agent and work agent, and the tracker, a connection of their own, as separate processes have; by default they share one (docs/benchmarks.md).")
	flag.BoolVar(&cfg.feedback, "feedback", true, "Write the ManifestWork feedback with every churn change, not only the agent report.")
	flag.StringVar(&cfg.binary, "binary", "", "The argocd-pull-addon binary; empty: build it from this tree.")
	flag.IntVar(&cfg.creators, "creators", 32, "Concurrent creates of the Application burst.")
	flag.IntVar(&cfg.churnWorkers, "churn-workers", 32, "Concurrent simulated spoke writers in the churn phase.")
	flag.IntVar(&cfg.spokeWorkers, "spoke-workers", 16, "Concurrent simulated spoke writers in the status fan-in.")
	flag.BoolVar(&cfg.trees, "trees", false, "Each simulated agent also sends its Application's resource tree with every change, and the manager writes the trees into a Redis this tool starts, as into the hub Argo CD's (docs/argocd-ui.md).")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())

	var clusters []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--clusters: %q is not a positive number", s)
		}
		clusters = append(clusters, n)
	}
	if *runs < 1 || cfg.appSets < 1 || cfg.churnRate <= 0 || cfg.slowChurn < 0 {
		return fmt.Errorf("--runs, --appsets and --churn must be positive, --slow-churn not negative")
	}
	if err := validChurnKind(cfg.churnKind); err != nil {
		return err
	}
	cfg.managerArgs = strings.Fields(*mgrFlags)
	cfg.managerEnv = strings.Fields(*mgrEnv)
	for _, kv := range cfg.managerEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("--manager-env: %q is not NAME=value", kv)
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cfg.workDir = *workDir
	if cfg.workDir == "" {
		d, err := os.MkdirTemp("", "bench-scale-")
		if err != nil {
			return err
		}
		cfg.workDir = d
	}
	if *keep || *workDir != "" {
		logf("work directory: %s", cfg.workDir)
	} else {
		defer os.RemoveAll(cfg.workDir)
	}
	if cfg.binary == "" {
		logf("building argocd-pull-addon")
		b, err := buildManager(cfg.workDir)
		if err != nil {
			return err
		}
		cfg.binary = b
	}

	header(os.Stdout, cfg, clusters, *runs)
	var all [][]*runResult
	for _, n := range clusters {
		var results []*runResult
		for r := 1; r <= *runs; r++ {
			res, err := runOnce(ctx, cfg, n, r)
			if err != nil {
				return fmt.Errorf("%d clusters, run %d: %w", n, r, err)
			}
			printRun(os.Stdout, res, r, *runs)
			results = append(results, res)
		}
		all = append(all, results)
	}
	printSummary(os.Stdout, cfg, all)
	return nil
}
