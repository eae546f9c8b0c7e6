// Package fleet starts a sandbox of real clusters for end-to-end tests: a hub and N managed
// clusters, each its own kube-apiserver, etcd and kube-controller-manager, joined with
// real OCM (registration, work, addon-manager) running in the test process.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	registrationspoke "open-cluster-management.io/ocm/pkg/registration/spoke"
	registrationaddon "open-cluster-management.io/ocm/pkg/registration/spoke/addon"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// FleetOptions say what StartFleet starts.
type FleetOptions struct {
	// Clusters is how many managed clusters join the hub, named cluster1, cluster2, ...;
	// 0 means 2.
	Clusters int
	// ClustersWithoutArgoCD and HubWithoutArgoCD leave the Argo CD CRDs that
	// framework.CRDPaths lists (Argo CD v2's, which our typed API uses) off the managed
	// clusters or the hub, for tests that install Argo CD there themselves.
	ClustersWithoutArgoCD bool
	HubWithoutArgoCD      bool
	// WorkStatusSyncInterval is how often the work agents sync resource status feedback to
	// the hub; 0 keeps the klusterlet default (10 s).
	WorkStatusSyncInterval time.Duration
	// AddOnLeaseDurationSeconds shortens the window in which the klusterlets' registration
	// agents mark an addon unavailable after its Lease stopped being renewed: OCM's
	// AddOnLeaseControllerLeaseDurationSeconds (the window is 5 times it; OCM's default 60
	// makes it 5 minutes). Addon agents built on addon-framework renew their Lease every
	// 60-75 s, so below 16 a healthy agent would flap. AddOnLeaseSyncInterval is how often
	// they look at the Leases (OCM's AddOnLeaseControllerSyncInterval, default 30 s). Both
	// are process-wide in OCM: every fleet of the process gets the last values set; 0 keeps
	// OCM's.
	AddOnLeaseDurationSeconds int
	AddOnLeaseSyncInterval    time.Duration
	// Dir holds kubeconfigs, the agents' hub credentials and kube-controller-manager logs;
	// empty means a temporary directory that Stop removes.
	Dir string
	// StartTimeout bounds StartFleet; 0 means 3 minutes (it takes 15-25 s on 2 busy cores).
	StartTimeout time.Duration
}

// Fleet is a running hub and its managed clusters.
type Fleet struct {
	Hub      *FleetHub
	Clusters []*FleetCluster
	// Dir is FleetOptions.Dir, or the temporary directory used instead.
	Dir string
	// StartDuration is how long StartFleet took, StartPhases how long each phase of it.
	StartDuration time.Duration
	StartPhases   []FleetPhase

	comps     *ocmComponents
	removeDir bool
}

// FleetPhase is one timed phase of StartFleet.
type FleetPhase struct {
	Name     string
	Duration time.Duration
}

// StartFleet starts the hub and the clusters' control planes, OCM's hub controllers and
// addon-manager, and a klusterlet per cluster; it accepts every cluster and returns once
// all are Joined and Available and their work agents run. On error it stops what it
// started and returns no fleet.
func StartFleet(ctx context.Context, opts FleetOptions) (started *Fleet, err error) {
	start := time.Now()
	if opts.Clusters == 0 {
		opts.Clusters = 2
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	f := &Fleet{Dir: opts.Dir, comps: newOCMComponents()}
	if f.Dir == "" {
		if f.Dir, err = os.MkdirTemp("", "fleet-"); err != nil {
			return nil, fmt.Errorf("creating the fleet's directory: %w", err)
		}
		f.removeDir = true
	}
	defer func() {
		if err != nil {
			err, started = errors.Join(err, f.Stop()), nil
		}
	}()
	phase := time.Now()
	timed := func(name string) {
		f.StartPhases = append(f.StartPhases, FleetPhase{Name: name, Duration: time.Since(phase)})
		phase = time.Now()
	}

	if opts.AddOnLeaseDurationSeconds > 0 {
		if opts.AddOnLeaseDurationSeconds < 16 {
			return nil, fmt.Errorf("AddOnLeaseDurationSeconds %d: under 16 the 60-75 s lease renewals of a healthy addon agent miss the window", opts.AddOnLeaseDurationSeconds)
		}
		registrationaddon.AddOnLeaseControllerLeaseDurationSeconds = opts.AddOnLeaseDurationSeconds
	}
	if opts.AddOnLeaseSyncInterval > 0 {
		registrationspoke.AddOnLeaseControllerSyncInterval = opts.AddOnLeaseSyncInterval
	}

	if err := f.startControlPlanes(opts); err != nil {
		return f, err
	}
	timed("control planes")

	if err := startOCMHub(ctx, f.comps, f.Hub, filepath.Join(f.Dir, "hub", "bootstrap.kubeconfig")); err != nil {
		return f, err
	}
	for _, c := range f.Clusters {
		if err := startOCMRegistrationAgent(ctx, f.comps, c, f.Hub.BootstrapKubeconfigFile); err != nil {
			return f, err
		}
	}
	if err := f.forEachCluster(func(c *FleetCluster) error {
		if err := f.Hub.acceptCluster(ctx, f.comps, c.Name); err != nil {
			return err
		}
		return waitForManagedClusterCondition(ctx, f.comps, f.Hub.APIServer.Client, c.Name, clusterv1.ManagedClusterConditionJoined)
	}); err != nil {
		return f, err
	}
	timed("clusters joined")

	for _, c := range f.Clusters {
		if err := startOCMWorkAgent(f.comps, c, opts.WorkStatusSyncInterval); err != nil {
			return f, err
		}
	}
	if err := f.forEachCluster(func(c *FleetCluster) error {
		return waitForManagedClusterCondition(ctx, f.comps, f.Hub.APIServer.Client, c.Name, clusterv1.ManagedClusterConditionAvailable)
	}); err != nil {
		return f, err
	}
	timed("clusters available")
	f.StartDuration = time.Since(start)
	return f, nil
}

// startControlPlanes starts the hub's and every cluster's control plane in parallel: each
// takes seconds, mostly waiting for its CRDs to be served.
func (f *Fleet) startControlPlanes(opts FleetOptions) error {
	names := []string{"hub"}
	for i := 1; i <= opts.Clusters; i++ {
		names = append(names, fmt.Sprintf("cluster%d", i))
	}
	planes := make([]*ControlPlane, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		dir := filepath.Join(f.Dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		cpOpts := controlPlaneOptions{
			name: name, dir: dir,
			withArgoCDCRDs: (i == 0 && !opts.HubWithoutArgoCD) || (i > 0 && !opts.ClustersWithoutArgoCD),
			// Every cluster collects garbage and deletes namespaces, as Argo CD's and OCM's
			// cascading deletes expect.
			controllers: []string{"garbagecollector", "namespace"},
		}
		if i == 0 {
			// Only the hub signs: klusterlets and addon agents request their hub
			// credentials there. It aggregates ClusterRoles as every cluster does, so
			// view, edit and admin take in the chart's tenant roles.
			cpOpts.controllers = append(cpOpts.controllers, "csrsigning", "clusterrole-aggregation")
			// The manager runs as the chart's ServiceAccount: PullModel.RefusedManagerRequests.
			cpOpts.audit = framework.NewAuditLog(dir, "system:serviceaccount:"+framework.ChartNamespace+":"+PullManagerServiceAccount)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			planes[i], errs[i] = startControlPlane(cpOpts)
		}()
	}
	wg.Wait()
	// Keep what did start so that Stop stops it.
	for _, cp := range planes {
		f.comps.watch(cp.exited)
	}
	f.Hub = &FleetHub{ControlPlane: planes[0]}
	for i, cp := range planes[1:] {
		f.Clusters = append(f.Clusters, &FleetCluster{
			ControlPlane:     cp,
			HubKubeconfigDir: filepath.Join(f.Dir, names[i+1], "hub-kubeconfig"),
		})
	}
	return errors.Join(errs...)
}

// forEachCluster runs fn for every cluster in parallel and joins their errors.
func (f *Fleet) forEachCluster(fn func(*FleetCluster) error) error {
	errs := make([]error, len(f.Clusters))
	var wg sync.WaitGroup
	for i, c := range f.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Cluster is the managed cluster called name, or nil.
func (f *Fleet) Cluster(name string) *FleetCluster {
	for _, c := range f.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Err reports OCM components that failed since the fleet started; tests can check it
// when something does not converge.
func (f *Fleet) Err() error { return f.comps.err() }

// Stop stops OCM's agents and controllers, then every control plane, and removes the
// fleet's directory if StartFleet created it.
func (f *Fleet) Stop() error {
	if f == nil {
		return nil
	}
	errs := []error{f.comps.stop()}
	for _, c := range f.Clusters {
		if c != nil && c.ControlPlane != nil {
			errs = append(errs, c.ControlPlane.Stop())
		}
	}
	if f.Hub != nil && f.Hub.ControlPlane != nil {
		errs = append(errs, f.Hub.ControlPlane.Stop())
	}
	if f.removeDir {
		if err := os.RemoveAll(f.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", f.Dir, err))
		}
	}
	return errors.Join(errs...)
}
