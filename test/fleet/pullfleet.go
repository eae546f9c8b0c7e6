package fleet

// The whole pull model on a fleet, as the e2e suite and the sandbox run it: OCM, Argo CD
// on every cluster, the applicationset-controller, argocd-server and Argo CD's Redis on the
// hub, the hub chart with our manager, and the addon enabled with an agent per cluster. Optionally, for hub-rendered
// delivery (docs/cmp.md): clusters left without Argo CD and the addon, and Argo CD on the
// hub itself with the chart's Config Management Plugin.

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
	// ClustersWithoutPullModel name clusters that get neither Argo CD nor the addon: they
	// run OCM's agents only, as a cluster served by hub-rendered delivery does.
	ClustersWithoutPullModel []string
	// HubRendering runs Argo CD on the hub itself, as hub-rendered delivery needs: a
	// repo-server with the ocm-manifestwork Config Management Plugin sidecar running our
	// binary, and an application-controller deploying to the hub (in-cluster destination),
	// with argocd-cm holding the ManifestWork health check. The plugin configuration and
	// the health check come from the hub chart rendered with cmp.enabled=true, which is
	// also what the hub gets installed.
	HubRendering bool
	// Step, when set, is told each step as it ends and how long it took.
	Step func(name string, took time.Duration)
}

// PullFleet is a running fleet with the pull model installed and enabled on every
// cluster but ClustersWithoutPullModel.
type PullFleet struct {
	*Fleet
	Pull *PullModel
	// HubArgoCD runs the applicationset-controller; ArgoCD[cluster] the repo-server and
	// application-controller of each cluster with the pull model.
	HubArgoCD *ArgoCD
	ArgoCD    map[string]*ArgoCD
	// HubRenderer is the hub's own Argo CD with PullFleetOptions.HubRendering: CMP
	// sidecar, repo-server and application-controller.
	HubRenderer *ArgoCD
	// HubServer is the hub's argocd-server (ServerURL, ResourceTree), reading the hub's
	// Argo CD Redis: HubRenderer's when it runs, else one of HubServer's own. The manager
	// writes pulled Applications' resource trees there (--argocd-redis-address).
	HubServer *ArgoCD

	withoutPullModel map[string]bool
}

// StartPullFleet starts the fleet, Argo CD on every cluster, argocd-server and Redis on the
// hub (and Argo CD rendering on the hub with HubRendering), installs the hub chart and
// starts the manager as its ServiceAccount, with --argocd-redis-address at the hub's Redis,
// starts the applicationset-controller on the hub, enables the addon on every cluster as
// `clusteradm addon enable` does and starts each agent where its Deployment would run;
// ClustersWithoutPullModel are left out of Argo CD and the addon. On error it stops what
// it started.
func StartPullFleet(ctx context.Context, opts PullFleetOptions) (started *PullFleet, err error) {
	step := func(name string, since time.Time) {
		if opts.Step != nil {
			opts.Step(name, time.Since(since))
		}
	}
	p := &PullFleet{ArgoCD: map[string]*ArgoCD{}, withoutPullModel: map[string]bool{}}
	for _, name := range opts.ClustersWithoutPullModel {
		p.withoutPullModel[name] = true
	}
	var hubCMP *ChartCMP
	if opts.HubRendering {
		opts.PullModel.ChartValues = withCMPEnabled(opts.PullModel.ChartValues)
		if hubCMP, err = RenderChartCMP(opts.PullModel.ChartValues); err != nil {
			return nil, err
		}
	}
	if p.Fleet, err = StartFleet(ctx, opts.Fleet); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err, started = errors.Join(err, p.Stop()), nil
		}
	}()
	step(fmt.Sprintf("hub + %d clusters joined with OCM", len(p.Clusters)), time.Now().Add(-p.StartDuration))

	for name := range p.withoutPullModel {
		if p.Cluster(name) == nil {
			return p, fmt.Errorf("ClustersWithoutPullModel: no cluster %s in the fleet", name)
		}
	}

	start := time.Now()
	if hubCMP != nil {
		// Our binary is the plugin's command: build it now rather than in InstallPullModel.
		dir := filepath.Join(p.Dir, "pullmodel")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return p, err
		}
		if opts.PullModel.Binary, err = pullAddonBinary(opts.PullModel.Binary, dir); err != nil {
			return p, err
		}
	}
	// The hub's Argo CD next to Argo CD on the clusters: each start mostly waits.
	hubArgoCD := make(chan error, 1)
	go func() { hubArgoCD <- p.startHubArgoCD(opts, hubCMP) }()
	var mu sync.Mutex
	err = p.forEachCluster(func(c *FleetCluster) error {
		if p.withoutPullModel[c.Name] {
			return nil
		}
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
	})
	if err := errors.Join(err, <-hubArgoCD); err != nil {
		return p, err
	}
	name := "Argo CD on every pull-model cluster (repo-server, application-controller), argocd-server on the hub"
	if hubCMP != nil {
		name += ", Argo CD rendering on the hub (with the CMP sidecar)"
	}
	step(name, start)

	start = time.Now()
	// The hub serves Argo CD v3's CRDs, as a hub running Argo CD 3 does.
	if err := InstallArgoCDV3CRDs(p.Hub.APIServer.Config); err != nil {
		return p, err
	}
	// Where the manager finds the hub's Argo CD Redis: the argocd-redis Service on a real
	// hub. Before the caller's arguments, which may override it.
	opts.PullModel.ManagerArgs = append([]string{"--argocd-redis-address=" + p.HubServer.RedisAddr}, opts.PullModel.ManagerArgs...)
	if p.Pull, err = InstallPullModel(ctx, p.Fleet, opts.PullModel); err != nil {
		return p, err
	}
	step("hub chart installed, manager running as its ServiceAccount", start)

	start = time.Now()
	appSetOpts := ArgoCDApplicationSetOptions{
		APIServer: p.Hub.APIServer, KubeconfigFile: p.Hub.KubeconfigFile,
		Dir: filepath.Join(p.Dir, "hub", "argocd"), KeepDir: true, SkipCRDs: true,
		// ApplicationSets with a RollingSync strategy roll out step by step; one without a
		// strategy is unaffected.
		ExtraArgs: []string{"--enable-progressive-syncs"},
	}
	if p.HubRenderer != nil {
		appSetOpts.RepoServerAddr = p.HubRenderer.RepoServerAddr
	}
	if p.HubArgoCD, err = StartArgoCDApplicationSetController(appSetOpts); err != nil {
		return p, err
	}
	step("applicationset-controller on the hub", start)

	start = time.Now()
	for _, c := range p.Clusters {
		if p.withoutPullModel[c.Name] {
			continue
		}
		if err := p.Pull.EnableAddon(ctx, c.Name, ""); err != nil {
			return p, err
		}
	}
	if err := p.forEachCluster(func(c *FleetCluster) error {
		if p.withoutPullModel[c.Name] {
			return nil
		}
		// Where the agent finds its cluster's Argo CD Redis: the Service on a real cluster.
		p.Pull.SetAgentArgs(c.Name, "--redis-address="+p.ArgoCD[c.Name].RedisAddr)
		if err := p.Pull.StartAgent(ctx, c.Name, ""); err != nil {
			return fmt.Errorf("agent of %s: %w", c.Name, err)
		}
		return nil
	}); err != nil {
		return p, err
	}
	step("addon enabled on every pull-model cluster, agents running", start)
	return p, nil
}

// startHubArgoCD starts Argo CD on the hub: the renderer with cmp (hub-rendered
// delivery), then argocd-server on the renderer's Redis, or on a Redis of its own without
// a renderer, so that the hub runs one Redis as an Argo CD installation does.
func (p *PullFleet) startHubArgoCD(opts PullFleetOptions, cmp *ChartCMP) error {
	serverOpts := ArgoCDServerOptions{
		APIServer: p.Hub.APIServer, KubeconfigFile: p.Hub.KubeconfigFile,
		Dir: filepath.Join(p.Dir, "hub", "argocd"), KeepDir: true,
	}
	if cmp != nil {
		var err error
		if p.HubRenderer, err = p.startHubRenderer(opts, cmp); err != nil {
			return err
		}
		serverOpts.RedisAddr, serverOpts.RedisPassword = p.HubRenderer.RedisAddr, p.HubRenderer.RedisPassword
		serverOpts.RepoServerAddr = p.HubRenderer.RepoServerAddr
	}
	var err error
	if p.HubServer, err = StartArgoCDServer(serverOpts); err != nil {
		return fmt.Errorf("argocd-server on the hub: %w", err)
	}
	return nil
}

// startHubRenderer starts Argo CD on the hub for hub-rendered delivery: the chart's plugin
// in a CMP sidecar whose PATH holds our binary, the chart's health check in argocd-cm.
// Like every Argo CD of the fleet it deploys to its own API server, here the hub.
func (p *PullFleet) startHubRenderer(opts PullFleetOptions, cmp *ChartCMP) (*ArgoCD, error) {
	a, err := StartArgoCD(ArgoCDOptions{
		APIServer: p.Hub.APIServer, KubeconfigFile: p.Hub.KubeconfigFile, Name: "hub",
		Dir: filepath.Join(p.Dir, "hub", "argocd"), KeepDir: true, AppResync: opts.AppResync,
		CMP: &ArgoCDCMPOptions{
			PluginYAML: cmp.PluginYAML,
			Path:       []string{filepath.Dir(opts.PullModel.Binary)},
		},
		ArgoCDConfig: cmp.ArgoCDConfig,
	})
	if err != nil {
		return a, fmt.Errorf("argo CD on the hub: %w", err)
	}
	return a, nil
}

// withCMPEnabled is values with cmp.enabled=true, leaving values and its cmp map as they
// are.
func withCMPEnabled(values map[string]any) map[string]any {
	out := make(map[string]any, len(values)+1)
	for k, v := range values {
		out[k] = v
	}
	cmp := map[string]any{}
	if given, ok := values["cmp"].(map[string]any); ok {
		for k, v := range given {
			cmp[k] = v
		}
	}
	cmp["enabled"] = true
	out["cmp"] = cmp
	return out
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
		files = append(files, p.Pull.ManagerLogs()...)
	}
	for _, c := range p.Clusters {
		if p.withoutPullModel[c.Name] {
			continue
		}
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
	if p.HubRenderer != nil {
		files = append(files, p.HubRenderer.Logs("argocd-cmp-server"), p.HubRenderer.Logs("argocd-application-controller"))
	}
	if p.HubServer != nil {
		files = append(files, p.HubServer.Logs("argocd-server"))
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
	if p.HubServer != nil {
		errs = append(errs, p.HubServer.Stop())
	}
	if p.HubRenderer != nil {
		errs = append(errs, p.HubRenderer.Stop())
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
