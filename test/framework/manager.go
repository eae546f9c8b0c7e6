package framework

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/manager"
)

// RunManager starts a controller-runtime manager on cfg, cached like the binary's
// (manager.CacheOptions) and without metrics or probe listeners, with the controllers
// setup registers, and waits until its cache has synced. stop cancels it and returns
// what Start returned.
func RunManager(cfg *rest.Config, scheme *runtime.Scheme, setup func(ctrl.Manager) error) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  manager.CacheOptions(),
	})
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
