package main

// The sandbox itself, in the fleet's network namespace: the fleet with the pull model,
// the guestbook example, and its report followed until the sandbox is stopped.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// healthCheckInterval is how often the sandbox asks the fleet whether a process of it
// exited (an in-memory check, no API call).
const healthCheckInterval = 5 * time.Second

// settleGrace is how long the sandbox waits, once the report lists every cluster, for it to
// settle (reportSettled) before showing it anyway.
const settleGrace = 2 * time.Minute

// runSandbox starts the fleet in dir, applies the example, prints its report when every
// cluster is in it and how to reach the API servers, then re-prints the report when it
// changes until ctx ends. hostListeners, one per API server (hub first), are sockets in
// the host's network namespace to serve the API servers on; nil: the user goes through
// nsenter. It stops everything it started before it returns; a stop by ctx is no error.
func runSandbox(ctx context.Context, opts options, dir string, hostListeners []net.Listener) (err error) {
	if err := fleet.KlogToFile(filepath.Join(dir, "ocm.log")); err != nil {
		return fmt.Errorf("sending OCM's logs to %s: %w", dir, err)
	}
	// controller-runtime's clients log through klog too: into the same file.
	ctrl.SetLogger(klog.NewKlogr())
	start := time.Now()
	setupCtx, cancelSetup := context.WithTimeout(ctx, opts.timeout)
	defer cancelSetup()
	interrupted := func(err error) error {
		if ctx.Err() != nil {
			fmt.Println("Set-up interrupted.")
			return nil
		}
		return err
	}

	fmt.Printf("Starting a hub and %d managed clusters with OCM, Argo CD and argocd-pull-addon in %s\n", opts.clusters, dir)
	pf, err := fleet.StartPullFleet(setupCtx, fleet.PullFleetOptions{
		Fleet: fleet.FleetOptions{Clusters: opts.clusters, Dir: dir, StartTimeout: opts.timeout},
		Step:  printStep,
	})
	if err != nil {
		return interrupted(fmt.Errorf("starting the fleet (logs in %s): %w", dir, err))
	}
	defer func() {
		fmt.Println("Stopping the fleet...")
		stopping := time.Now()
		if stopErr := pf.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the fleet: %w", stopErr))
			return
		}
		fmt.Printf("Stopped everything the sandbox started (%s).\n", time.Since(stopping).Round(100*time.Millisecond))
	}()

	step := time.Now()
	planes := []*fleet.ControlPlane{pf.Hub.ControlPlane}
	var clusters []string
	for _, c := range pf.Clusters {
		planes = append(planes, c.ControlPlane)
		clusters = append(clusters, c.Name)
	}
	access, err := exposeAPIServers(ctx, planes, dir, hostListeners)
	if err != nil {
		return err
	}
	printStep("kubeconfigs written to "+filepath.Join(dir, "kubeconfig"), time.Since(step))

	hub := pf.Hub.APIServer.Client
	step = time.Now()
	if err := fleet.BindDefaultClusterSet(setupCtx, hub, framework.ChartNamespace, clusters); err != nil {
		return interrupted(err)
	}
	printStep("default ManagedClusterSet bound to namespace "+framework.ChartNamespace, time.Since(step))
	step = time.Now()
	repo, err := fleet.NewGuestbookRepo(filepath.Join(dir, "git", "argocd-example-apps"))
	if err != nil {
		return fmt.Errorf("creating the guestbook's git repository: %w", err)
	}
	if err := fleet.ApplyGuestbookExample(setupCtx, hub, repo.URL); err != nil {
		return interrupted(err)
	}
	printStep("example applied: Placement, GitOpsCluster, ApplicationSet "+fleet.GuestbookApplicationSet, time.Since(step))

	watcher, err := client.NewWithWatch(pf.Hub.APIServer.Config, client.Options{Scheme: pf.Hub.APIServer.Scheme})
	if err != nil {
		return fmt.Errorf("creating a watching client for the hub: %w", err)
	}
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	reports := make(chan *appsv1alpha1.MulticlusterApplicationSetReport)
	key := client.ObjectKey{Namespace: framework.ChartNamespace, Name: fleet.GuestbookApplicationSet}
	go followReport(followCtx, watcher, key, reports)

	step = time.Now()
	health := time.NewTicker(healthCheckInterval)
	defer health.Stop()
	// setUp ends the wait for a complete report, settled the wait for it to settle once
	// it is complete; both nil once the report is shown.
	setUp := setupCtx.Done()
	var settled <-chan time.Time
	var shown string
	var latest *appsv1alpha1.MulticlusterApplicationSetReport
	ready := func() {
		setUp, settled = nil, nil
		printStep("report lists every cluster", time.Since(step))
		fmt.Printf("\nReady after %s. MulticlusterApplicationSetReport %s on the hub:\n\n%s",
			time.Since(start).Round(time.Second), key, shown)
		if slices.ContainsFunc(latest.Statuses.ClusterConditions, func(e appsv1alpha1.ClusterCondition) bool {
			return e.HealthStatus == string(appsv1alpha1.HealthStatusProgressing)
		}) {
			fmt.Println("(Progressing is as good as it gets: no kubelet runs in the sandbox, so Deployments get no pods.)")
		}
		fmt.Println()
		printHowTo(os.Stdout, access, pf.Pull.Binary, append([]string{filepath.Join(dir, "ocm.log")}, pf.Logs()...), hostListeners == nil, keptDir(opts, dir))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-setUp:
			return interrupted(fmt.Errorf("no report listing every cluster %s after the start (last seen:\n%s)", opts.timeout, cmp.Or(shown, "none")))
		case <-settled:
			if reportComplete(latest, clusters) {
				ready()
			} else {
				settled = nil
			}
		case <-health.C:
			if err := pf.Err(); err != nil {
				return fmt.Errorf("a process of the fleet failed (logs in %s): %w", dir, err)
			}
		case r := <-reports:
			if r == nil {
				fmt.Printf("\n[%s] The report %s was deleted.\n", time.Now().Format(time.TimeOnly), key)
				shown = ""
				continue
			}
			table := reportTable(r)
			if setUp != nil {
				latest = r
				shown = table
				switch {
				case !reportComplete(r, clusters):
				case reportSettled(r):
					ready()
				case settled == nil:
					// Seconds later the agents are available and Argo CD has synced:
					// a first table that does not look like a failure.
					settled = time.After(settleGrace)
				}
				continue
			}
			if table != shown {
				fmt.Printf("\n[%s] The report changed:\n\n%s", time.Now().Format(time.TimeOnly), table)
				shown = table
			}
		}
	}
}

// keptDir is dir when it stays after the sandbox stops, or "" (see runParent).
func keptDir(opts options, dir string) string {
	if opts.dir == "" && !opts.keep {
		return ""
	}
	return dir
}

// printStep prints a step of the set-up and how long it took.
func printStep(name string, took time.Duration) {
	fmt.Printf("  %-72s %8s\n", name, took.Round(100*time.Millisecond))
}

// kubectlCommand is how the user runs kubectl: bin/envtest/kubectl (next to the API
// servers, `make sandbox` builds it), else the one on PATH.
func kubectlCommand() string {
	assets, err := framework.AssetsDir()
	if err != nil {
		return "kubectl"
	}
	path := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "kubectl"
	}
	return underWorkdir(path)
}

// underWorkdir is path relative to the working directory when it is under it (bin/...),
// else path.
func underWorkdir(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path
}
