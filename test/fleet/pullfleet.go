package fleet

// The whole pull model on a fleet, as the e2e suite and the sandbox run it: OCM, Argo CD
// on every cluster and the applicationset-controller on the hub, the hub chart with our
// manager, and the addon enabled with an agent per cluster.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// PullFleetOptions say what StartPullFleet starts.
type PullFleetOptions struct {
	// Fleet configures the OCM fleet; its Dir is where every process logs.
	Fleet FleetOptions
	// PullModel configures the hub chart, the manager and the agents.
	PullModel PullModelOptions
	// AppResync is how often Argo CD on the clusters refreshes its Applications
	// (--app-resync); 0 means Argo CD's default (3 minutes).
	AppResync time.Duration
	// Step, when set, is told each step as it ends and how long it took.
	Step func(name string, took time.Duration)
}

// PullFleet is a running fleet with the pull model installed and enabled on every
// cluster.
type PullFleet struct {
	*Fleet
	Pull *PullModel
	// HubArgoCD runs the applicationset-controller; ArgoCD[cluster] the repo-server and
	// application-controller of each cluster.
	HubArgoCD *ArgoCD
	ArgoCD    map[string]*ArgoCD
}

// StartPullFleet starts the fleet, Argo CD on every cluster, installs the hub chart and
// starts the manager as its ServiceAccount, starts the applicationset-controller on the
// hub, enables the addon on every cluster as `clusteradm addon enable` does and starts each
// agent where its Deployment would run. On error it stops what it started.
func StartPullFleet(ctx context.Context, opts PullFleetOptions) (started *PullFleet, err error) {
	step := func(name string, since time.Time) {
		if opts.Step != nil {
			opts.Step(name, time.Since(since))
		}
	}
	p := &PullFleet{ArgoCD: map[string]*ArgoCD{}}
	if p.Fleet, err = StartFleet(ctx, opts.Fleet); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err, started = errors.Join(err, p.Stop()), nil
		}
	}()
	step(fmt.Sprintf("hub + %d clusters joined with OCM", len(p.Clusters)), time.Now().Add(-p.StartDuration))

	start := time.Now()
	var mu sync.Mutex
	if err := p.forEachCluster(func(c *FleetCluster) error {
		a, err := StartArgoCD(ArgoCDOptions{
			APIServer: c.APIServer, KubeconfigFile: c.KubeconfigFile, Name: c.Name,
			Dir: filepath.Join(p.Dir, c.Name, "argocd"), KeepDir: true, AppResync: opts.AppResync,
		})
		if a != nil {
			mu.Lock()
			p.ArgoCD[c.Name] = a
			mu.Unlock()
		}
		if err != nil {
			return fmt.Errorf("argo CD on %s: %w", c.Name, err)
		}
		return nil
	}); err != nil {
		return p, err
	}
	step("Argo CD on every cluster (repo-server, application-controller)", start)

	start = time.Now()
	// The hub serves Argo CD v3's CRDs, as a hub running Argo CD 3 does.
	if err := InstallArgoCDV3CRDs(p.Hub.APIServer.Config); err != nil {
		return p, err
	}
	if p.Pull, err = InstallPullModel(ctx, p.Fleet, opts.PullModel); err != nil {
		return p, err
	}
	step("hub chart installed, manager running as its ServiceAccount", start)

	start = time.Now()
	if p.HubArgoCD, err = StartArgoCDApplicationSetController(ArgoCDApplicationSetOptions{
		APIServer: p.Hub.APIServer, KubeconfigFile: p.Hub.KubeconfigFile,
		Dir: filepath.Join(p.Dir, "hub", "argocd"), KeepDir: true, SkipCRDs: true,
	}); err != nil {
		return p, err
	}
	step("applicationset-controller on the hub", start)

	start = time.Now()
	for _, c := range p.Clusters {
		if err := p.Pull.EnableAddon(ctx, c.Name, ""); err != nil {
			return p, err
		}
	}
	if err := p.forEachCluster(func(c *FleetCluster) error {
		if err := p.Pull.StartAgent(ctx, c.Name, ""); err != nil {
			return fmt.Errorf("agent of %s: %w", c.Name, err)
		}
		return nil
	}); err != nil {
		return p, err
	}
	step("addon enabled on every cluster, agents running", start)
	return p, nil
}

// Err reports a process of ours, an Argo CD component or an OCM component that failed.
func (p *PullFleet) Err() error {
	if p.Pull != nil {
		return p.Pull.Err()
	}
	return p.Fleet.Err()
}

// Logs are the log files of our processes and of Argo CD's controllers.
func (p *PullFleet) Logs() []string {
	var files []string
	if p.Pull != nil {
		files = append(files, p.Pull.ManagerLog())
	}
	for _, c := range p.Clusters {
		if p.Pull != nil {
			files = append(files, p.Pull.AgentLog(c.Name))
		}
		if a := p.ArgoCD[c.Name]; a != nil {
			files = append(files, a.Logs("argocd-application-controller"))
		}
	}
	if p.HubArgoCD != nil {
		files = append(files, p.HubArgoCD.Logs("argocd-applicationset-controller"))
	}
	return files
}

// Stop stops the agents and the manager, Argo CD, then the fleet.
func (p *PullFleet) Stop() error {
	if p == nil {
		return nil
	}
	errs := []error{p.Pull.Stop()}
	for _, a := range p.ArgoCD {
		errs = append(errs, a.Stop())
	}
	if p.HubArgoCD != nil {
		errs = append(errs, p.HubArgoCD.Stop())
	}
	errs = append(errs, p.Fleet.Stop())
	return errors.Join(errs...)
}

// KlogToFile sends klog's output, where OCM's controllers running in this process log,
// into the file path instead of standard error.
func KlogToFile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(out)
	return nil
}
