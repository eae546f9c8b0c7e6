package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/reports"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// config is what every run shares.
type config struct {
	appSets     int
	churnKind   string
	churnRate   float64
	slowChurn   float64
	churnFor    time.Duration
	idle        time.Duration
	settleQuiet time.Duration
	feedback    bool
	// ownConnections: the load generator's clients have a connection each (hub.ownConnections).
	ownConnections bool
	binary         string
	workDir        string
	managerArgs    []string
	managerEnv     []string
	creators       int
	spokeWorkers   int
	churnWorkers   int
	// trees: the simulated agents send resource trees, which the manager writes into a
	// Redis (trees.go).
	trees bool
}

// phaseStats is what one phase cost.
type phaseStats struct {
	name                  string
	duration              time.Duration
	managerCPU            float64            // seconds
	managerPeakRSS        int64              // bytes, VmHWM reset at the phase's start
	managerWrites         float64            // POST, PUT, PATCH, DELETE to the API server
	managerRequests       float64            // all requests
	managerConflicts      float64            // writes answered 409 Conflict
	maxQueueDepth         map[string]float64 // deepest workqueue per controller, sampled every second
	apiserverCPU, etcdCPU float64            // seconds
	loadCPU               float64            // seconds of this process, the load generator
	machineBusy           float64            // share of all CPUs busy (every process, not only ours)
	api                   *apiProfile        // what the API server served, by resource and verb
}

// meter measures phases of the manager, kube-apiserver and etcd processes.
type meter struct {
	mgr             *managerProcess
	apiserver, etcd int
	api             *apiMetrics
}

// phaseRun is a phase being measured: the counters at its start, and the workqueue
// sampler (none for start-up, which begins before the manager serves metrics).
type phaseRun struct {
	m                       *meter
	name                    string
	start                   time.Time
	mgrCPU, apiCPU, etcdCPU float64
	loadCPU                 float64
	busy, all               float64
	requests                map[string]float64
	api                     *apiProfile

	depths map[string]float64
	stop   chan struct{}
	done   chan struct{}
}

func (m *meter) begin(name string) (*phaseRun, error) {
	if err := framework.ResetPeakRSS(m.mgr.pid()); err != nil {
		return nil, fmt.Errorf("resetting the manager's peak RSS: %w", err)
	}
	req, err := m.mgr.requests()
	if err != nil {
		return nil, err
	}
	api, err := m.api.read()
	if err != nil {
		return nil, err
	}
	busy, all := framework.MachineCPU()
	return (&phaseRun{m: m, name: name, start: time.Now(), requests: req, api: api, busy: busy, all: all,
		loadCPU: framework.ProcessCPUSeconds(os.Getpid()),
		mgrCPU:  framework.ProcessCPUSeconds(m.mgr.pid()), apiCPU: framework.ProcessCPUSeconds(m.apiserver),
		etcdCPU: framework.ProcessCPUSeconds(m.etcd)}).sample(), nil
}

// sample notes the manager's workqueue depths every second until end.
func (p *phaseRun) sample() *phaseRun {
	p.depths, p.stop, p.done = map[string]float64{}, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		for {
			if d, err := p.m.mgr.queueDepths(); err == nil {
				for k, v := range d {
					p.depths[k] = max(p.depths[k], v)
				}
			}
			select {
			case <-p.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return p
}

func (p *phaseRun) end() (phaseStats, error) {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	req, err := p.m.mgr.requests()
	if err != nil {
		return phaseStats{}, err
	}
	rss, err := framework.ProcessPeakRSS(p.m.mgr.pid())
	if err != nil {
		return phaseStats{}, err
	}
	var api *apiProfile
	if p.api != nil {
		now, err := p.m.api.read()
		if err != nil {
			return phaseStats{}, err
		}
		api = now.minus(p.api)
	}
	busy, all := framework.MachineCPU()
	return phaseStats{name: p.name, duration: time.Since(p.start), api: api,
		loadCPU:        framework.ProcessCPUSeconds(os.Getpid()) - p.loadCPU,
		machineBusy:    (busy - p.busy) / max(all-p.all, 1),
		managerCPU:     framework.ProcessCPUSeconds(p.m.mgr.pid()) - p.mgrCPU,
		managerPeakRSS: rss, managerWrites: writes(req) - writes(p.requests), managerRequests: total(req) - total(p.requests),
		managerConflicts: conflicts(req) - conflicts(p.requests),
		maxQueueDepth:    p.depths,
		apiserverCPU:     framework.ProcessCPUSeconds(p.m.apiserver) - p.apiCPU,
		etcdCPU:          framework.ProcessCPUSeconds(p.m.etcd) - p.etcdCPU}, nil
}

// settle waits until the manager has sent no write for cfg.settleQuiet (at most 5 minutes).
func (m *meter) settle(ctx context.Context, quiet time.Duration) error {
	last, stableSince := -1.0, time.Now()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
		req, err := m.mgr.requests()
		if err != nil {
			return err
		}
		if w := writes(req); w != last {
			last, stableSince = w, time.Now()
		} else if time.Since(stableSince) >= quiet {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	logf("  (the manager kept writing for 5 minutes; going on)")
	return nil
}

// runResult holds one run's figures.
type runResult struct {
	clusters, apps               int
	phases                       map[string]phaseStats
	order                        []string
	propP50, propP99, propAll    time.Duration
	fanInP50, fanInP99, fanInAll time.Duration
	fanInUnseen                  int
	freshP50, freshP99, freshMax time.Duration
	appP50, appP99, appMax       time.Duration // until the hub Application status shows the change
	changes, unseen              int
	churnRate                    float64
	writesPerChange              float64
	// treeSetsPerChange is the manager's Redis writes per churn change, redisMemory what
	// the hub's Redis holds at the end (--trees).
	treeSetsPerChange, redisMemory float64
	// slow is the second churn phase, at --slow-churn changes/s.
	slow                        churnResult
	largestReport, medianReport int
}

// churnResult is what a churn phase measured besides its phaseStats.
type churnResult struct {
	changes, unseen              int
	rate                         float64
	freshP50, freshP99, freshMax time.Duration
	appP50, appP99               time.Duration
}

// apiCPUPerChange is the hub API server's CPU seconds in phase per change made in it.
func apiCPUPerChange(p phaseStats, changes int) float64 {
	if changes == 0 {
		return 0
	}
	return p.apiserverCPU / float64(changes)
}

// apiCPUPerChangeAboveIdle is apiCPUPerChange without what the API server spends with
// nothing changing (its CPU rate in the idle phase over the phase's duration): the part
// the changes cost. At 5 changes/s the idle share alone is several ms per change, and it
// moves between runs with nothing of ours changed (docs/benchmarks.md).
func (r *runResult) apiCPUPerChangeAboveIdle(phase string, changes int) float64 {
	p, idle := r.phases[phase], r.phases["idle"]
	if changes == 0 || idle.duration <= 0 {
		return 0
	}
	above := p.apiserverCPU - idle.apiserverCPU/idle.duration.Seconds()*p.duration.Seconds()
	return max(above, 0) / float64(changes)
}

func (r *runResult) add(p phaseStats) {
	r.phases[p.name] = p
	r.order = append(r.order, p.name)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// runOnce sets up a fresh hub with clusters clusters, runs the manager against it and
// measures every phase.
func runOnce(ctx context.Context, cfg config, clusters, run int) (*runResult, error) {
	dir := filepath.Join(cfg.workDir, fmt.Sprintf("clusters-%d-run-%d", clusters, run))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &runResult{clusters: clusters, apps: clusters * cfg.appSets, phases: map[string]phaseStats{}}
	logf("%d clusters, run %d: starting the hub API server", clusters, run)
	h, err := startHub(dir, cfg.ownConnections)
	if err != nil {
		return nil, err
	}
	defer func() { _ = h.stop() }()
	logf("creating %d ManagedClusters with namespaces, ManagedClusterAddOns and agent RBAC", clusters)
	if err := h.createFleet(ctx, clusters); err != nil {
		return nil, fmt.Errorf("creating the fleet: %w", err)
	}
	t := newTracker()
	if err := t.start(ctx, h); err != nil {
		return nil, err
	}
	managerArgs := cfg.managerArgs
	var trees *treeRedis
	if cfg.trees {
		var args []string
		if trees, args, err = startTreeRedis(ctx, h, dir); err != nil {
			return nil, err
		}
		defer trees.stop()
		managerArgs = append(slices.Clip(managerArgs), args...)
	}
	apiPID, etcdPID := h.server.PIDs()
	logf("starting the manager (logs: %s)", filepath.Join(dir, "manager.log"))
	// Start-up is measured from the process start: CPU, peak RSS and requests from zero.
	busy, all := framework.MachineCPU()
	startup := &phaseRun{name: "start-up", start: time.Now(), requests: map[string]float64{}, busy: busy, all: all,
		loadCPU: framework.ProcessCPUSeconds(os.Getpid()),
		apiCPU:  framework.ProcessCPUSeconds(apiPID), etcdCPU: framework.ProcessCPUSeconds(etcdPID)}
	mgr, err := startManager(ctx, cfg.binary, h.kubeconfig, filepath.Join(dir, "manager.log"), managerArgs, cfg.managerEnv)
	if err != nil {
		return nil, err
	}
	defer mgr.stop()
	api, err := newAPIMetrics(h.adminCfg)
	if err != nil {
		return nil, err
	}
	m := &meter{mgr: mgr, apiserver: apiPID, etcd: etcdPID, api: api}
	startup.m = m

	measure := func(name string, f func() error) error {
		p, err := m.begin(name)
		if err != nil {
			return err
		}
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := m.settle(ctx, cfg.settleQuiet); err != nil {
			return err
		}
		s, err := p.end()
		if err != nil {
			return err
		}
		res.add(s)
		return nil
	}

	// Start-up: the addon manager's work on the existing fleet, until its writes stop.
	if err := m.settle(ctx, cfg.settleQuiet); err != nil {
		return nil, err
	}
	s, err := startup.end()
	if err != nil {
		return nil, err
	}
	res.add(s)
	if err := warmUp(ctx, h, t); err != nil {
		return nil, err
	}

	// Propagation: a burst of every ApplicationSet's Applications.
	appSets := make([]*argov1alpha1.ApplicationSet, cfg.appSets)
	for i := range appSets {
		appSets[i] = newApplicationSet(fmt.Sprintf("appset-%02d", i))
		if err := h.admin.Create(ctx, appSets[i]); err != nil {
			return nil, err
		}
	}
	created := make([]time.Time, res.apps)
	names := make([]string, res.apps)
	appSetOf := func(i int) *argov1alpha1.ApplicationSet { return appSets[i%cfg.appSets] }
	clusterOf := func(i int) string { return clusterName(i / cfg.appSets) }
	t.expectWorks(res.apps + 1) // and the warm-up's
	logf("propagation: creating %d Applications", res.apps)
	var start time.Time
	err = measure("propagation", func() error {
		start = time.Now()
		if err := framework.Parallel(ctx, res.apps, cfg.creators, func(i int) error {
			app := newApplication(appSetOf(i), clusterOf(i))
			names[i] = app.Name
			created[i] = time.Now()
			return h.admin.Create(ctx, app)
		}); err != nil {
			return err
		}
		select {
		case <-t.allWorks:
			return nil
		case <-time.After(20 * time.Minute):
			return fmt.Errorf("not every Application had a ManifestWork within 20 minutes")
		}
	})
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, res.apps)
	t.mu.Lock()
	for i, n := range names {
		seen := t.workSeen[n]
		lat[i] = seen.Sub(created[i])
		res.propAll = max(res.propAll, seen.Sub(start))
	}
	t.mu.Unlock()
	res.propP50, res.propP99 = percentile(lat, 50), percentile(lat, 99)
	logf("  every ManifestWork after %v (p50 %v, p99 %v)", res.propAll.Round(time.Millisecond), res.propP50.Round(time.Millisecond), res.propP99.Round(time.Millisecond))

	// Status fan-in: every spoke reports its synced Application, through the agent's
	// report and the work agent's feedback.
	sims := make([]*simApp, res.apps)
	for i, n := range names {
		if sims[i], err = newSimApp(t.work(n), appSetOf(i).Name, clusterOf(i)); err != nil {
			return nil, err
		}
		sims[i].trees = cfg.trees
	}
	since := time.Now()
	logf("status fan-in: %d agent reports and ManifestWork feedbacks", res.apps)
	err = measure("status fan-in", func() error {
		start := time.Now()
		if err := framework.Parallel(ctx, res.apps, cfg.spokeWorkers, func(i int) error {
			return sims[i].change(ctx, h, t, revision(1<<40), health.HealthStatusHealthy, true, since)
		}); err != nil {
			return err
		}
		res.fanInUnseen = t.waitSeen(ctx, 5*time.Minute)
		res.fanInAll = time.Since(start)
		return nil
	})
	if err != nil {
		return nil, err
	}
	fan, _ := t.takeLatencies()
	res.fanInP50, res.fanInP99 = percentile(fan, 50), percentile(fan, 99)
	logf("  every report reflected after %v (unseen %d)", res.fanInAll.Round(time.Millisecond), res.fanInUnseen)

	// Idle: nothing changes.
	logf("idle: %v without any change", cfg.idle)
	if err := measure("idle", func() error {
		select {
		case <-time.After(cfg.idle):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}); err != nil {
		return nil, err
	}

	// Churn: a steady stream of status changes.
	logf("churn: %.0f changes/s for %v", cfg.churnRate, cfg.churnFor)
	var churnTime time.Duration
	var setsBefore float64
	if trees != nil {
		if setsBefore, err = trees.sets(ctx); err != nil {
			return nil, err
		}
	}
	err = measure("churn", func() error {
		start := time.Now()
		n, err := churn(ctx, h, t, sims, cfg.churnKind, cfg.churnRate, cfg.churnFor, cfg.churnWorkers, cfg.feedback, since, 1<<41)
		churnTime = time.Since(start)
		res.changes = n
		res.unseen = t.waitSeen(ctx, 30*time.Second)
		return err
	})
	if err != nil {
		return nil, err
	}
	fresh, appFresh := t.takeLatencies()
	res.freshP50, res.freshP99, res.freshMax = percentile(fresh, 50), percentile(fresh, 99), maxDuration(fresh)
	res.appP50, res.appP99, res.appMax = percentile(appFresh, 50), percentile(appFresh, 99), maxDuration(appFresh)
	res.churnRate = float64(res.changes) / churnTime.Seconds()
	if res.changes > 0 {
		res.writesPerChange = res.phases["churn"].managerWrites / float64(res.changes)
	}
	if trees != nil && res.changes > 0 {
		setsAfter, err := trees.sets(ctx)
		if err != nil {
			return nil, err
		}
		res.treeSetsPerChange = (setsAfter - setsBefore) / float64(res.changes)
	}
	// Slow churn: the same changes at a tenth of the rate, where a change is rarely
	// coalesced with another into one write.
	if cfg.slowChurn > 0 {
		logf("slow churn: %.0f changes/s for %v", cfg.slowChurn, cfg.churnFor)
		err = measure(slowChurnPhase, func() error {
			start := time.Now()
			n, err := churn(ctx, h, t, sims, cfg.churnKind, cfg.slowChurn, cfg.churnFor, cfg.churnWorkers, cfg.feedback, since, 1<<42)
			res.slow.rate = float64(n) / time.Since(start).Seconds()
			res.slow.changes = n
			res.slow.unseen = t.waitSeen(ctx, 30*time.Second)
			return err
		})
		if err != nil {
			return nil, err
		}
		fresh, appFresh := t.takeLatencies()
		res.slow.freshP50, res.slow.freshP99, res.slow.freshMax = percentile(fresh, 50), percentile(fresh, 99), maxDuration(fresh)
		res.slow.appP50, res.slow.appP99 = percentile(appFresh, 50), percentile(appFresh, 99)
	}
	if trees != nil {
		if res.redisMemory, err = trees.usedMemory(ctx); err != nil {
			return nil, err
		}
	}
	sizes := t.reportSizes()
	if len(sizes) > 0 {
		fs := make([]float64, len(sizes))
		for i, s := range sizes {
			fs[i] = float64(s)
			res.largestReport = max(res.largestReport, s)
		}
		res.medianReport = int(median(fs))
	}
	return res, nil
}

// warmUp sends the first write of every type through the whole path once: the first
// write of a CRD type takes seconds on a fresh API server.
func warmUp(ctx context.Context, h *hub, t *tracker) error {
	logf("warm-up: one ApplicationSet with one Application")
	set := newApplicationSet("warmup")
	if err := h.admin.Create(ctx, set); err != nil {
		return err
	}
	app := newApplication(set, clusterName(0))
	if err := h.admin.Create(ctx, app); err != nil {
		return err
	}
	t.expectWorks(1)
	select {
	case <-t.allWorks:
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("warm-up: no ManifestWork within 2 minutes")
	}
	sim, err := newSimApp(t.work(app.Name), set.Name, clusterName(0))
	if err != nil {
		return err
	}
	if err := sim.change(ctx, h, t, revision(1), health.HealthStatusHealthy, true, time.Now()); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if n := t.waitSeen(ctx, 2*time.Minute); n > 0 {
		return fmt.Errorf("warm-up: the report did not show the change within 2 minutes")
	}
	t.takeLatencies()
	return checkRBAC(ctx, h, sim)
}

// checkRBAC proves the agents' identities are confined: cluster-0000's agent may not
// write a report into another cluster's namespace.
func checkRBAC(ctx context.Context, h *hub, sim *simApp) error {
	c, err := h.agentClient(sim.cluster)
	if err != nil {
		return err
	}
	_, err = reports.PublishReport(ctx, c, sim.app, clusterName(1), h.addonOwner(clusterName(1)), time.Now())
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("the agent of %s writing a report for %s: want Forbidden, got %v", sim.cluster, clusterName(1), err)
	}
	return nil
}
