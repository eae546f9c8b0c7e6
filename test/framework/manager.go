package framework

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
)

// ManagerOption changes one setting of the manager RunManager starts.
type ManagerOption func(*ctrl.Options)

// WithLogger gives the manager, and the controllers it runs, logger instead of
// controller-runtime's global one; a suite wraps it to observe what the controllers log.
func WithLogger(logger logr.Logger) ManagerOption {
	return func(o *ctrl.Options) { o.Logger = logger }
}

// WithNewClient builds the manager's client with newClient, e.g. RequestCounter.NewClient to
// count the writes of the controllers alone.
func WithNewClient(newClient client.NewClientFunc) ManagerOption {
	return func(o *ctrl.Options) { o.NewClient = newClient }
}

// WithCache caches as the binary does with other options, e.g.
// manager.CacheOptionsFor(argoNamespaces).
func WithCache(c cache.Options) ManagerOption {
	return func(o *ctrl.Options) { o.Cache = c }
}

// SetupHubControllers registers with mgr the hub controllers named in only (every one
// when empty) with their defaults, as the binary wires them: a setup for RunManager.
func SetupHubControllers(mgr ctrl.Manager, only ...string) error {
	return manager.SetupControllersWith(mgr, manager.DefaultControllerOptions(), only...)
}

// RunManager starts a controller-runtime manager on cfg, cached like the binary's
// (manager.CacheOptionsFor) and without metrics or probe listeners, with the controllers
// setup registers, and waits until its cache has synced. stop cancels it and returns
// what Start returned.
//
// Controller names are not checked for uniqueness: a suite may stop and start its manager
// again, and a benchmark may start one next to its suite's in the same test binary.
func RunManager(cfg *rest.Config, scheme *runtime.Scheme, setup func(ctrl.Manager) error, opts ...ManagerOption) (stop func() error, err error) {
	options := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  manager.CacheOptionsFor(nil),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, o := range opts {
		o(&options)
	}
	// Watches on a connection of their own, as the binary has them.
	if options.Cache.HTTPClient == nil {
		var err error
		if options.Cache, err = manager.WithOwnWatchConnection(options.Cache, cfg); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(cfg, options)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, errors.Join(errors.New("the manager's cache did not sync"), stop())
	}
	return stop, nil
}
