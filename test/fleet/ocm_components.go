package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openshift/library-go/pkg/controller/controllercmd"
	"github.com/openshift/library-go/pkg/operator/events"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	ocmfeature "open-cluster-management.io/api/feature"
	"open-cluster-management.io/ocm/pkg/features"
)

// ocmComponents runs OCM's hub controllers and klusterlet agents as goroutines of the test
// process, the way OCM's own integration tests do, and remembers the first error any of
// them returned so that waits fail fast instead of timing out.
type ocmComponents struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
	// checks report failures of processes the components depend on
	// (kube-controller-manager), so that waits fail fast on them too.
	checks []func() error
}

func newOCMComponents() *ocmComponents {
	ctx, cancel := context.WithCancel(context.Background())
	return &ocmComponents{ctx: ctx, cancel: cancel}
}

// run starts one component; it gets a context of its own whose cancel it may call to
// stop itself (the registration agent does on a bootstrap kubeconfig change, where a
// klusterlet pod would restart).
func (c *ocmComponents) run(name string, f func(ctx context.Context, cancel context.CancelFunc) error) {
	ctx, cancel := context.WithCancel(c.ctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		if err := f(ctx, cancel); err != nil && c.ctx.Err() == nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("OCM %s: %w", name, err))
			c.mu.Unlock()
		}
	}()
}

// watch adds a check that err reports.
func (c *ocmComponents) watch(check func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks = append(c.checks, check)
}

// err is what the components that failed so far returned, and the failed checks.
func (c *ocmComponents) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := slices.Clone(c.errs)
	for _, check := range c.checks {
		errs = append(errs, check())
	}
	return errors.Join(errs...)
}

// stop cancels every component and waits for them to return.
func (c *ocmComponents) stop() error {
	c.cancel()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("OCM components still running 30 s after they were stopped")
	}
}

// poll runs cond every interval until it holds, ctx ends, or an OCM component fails.
func (c *ocmComponents) poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.err(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// controllerContext is what OCM's Run functions expect from library-go's command wrapper.
func ocmControllerContext(name string, cfg *rest.Config) *controllercmd.ControllerContext {
	return &controllercmd.ControllerContext{
		KubeConfig:        rest.CopyConfig(cfg),
		EventRecorder:     events.NewLoggingEventRecorder(name, clock.RealClock{}),
		OperatorNamespace: ocmHubNamespace,
	}
}

var ocmFeatureGatesOnce struct {
	sync.Once
	err error
}

// addOCMFeatureGates registers OCM's feature gates at their defaults, as the hub and
// agent commands do at start-up. The gates are process-wide, hence once.
func addOCMFeatureGates() error {
	ocmFeatureGatesOnce.Do(func() {
		ocmFeatureGatesOnce.err = errors.Join(
			features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubRegistrationFeatureGates),
			features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubAddonManagerFeatureGates),
			features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubWorkFeatureGates),
			features.SpokeMutableFeatureGate.Add(ocmfeature.DefaultSpokeRegistrationFeatureGates),
			features.SpokeMutableFeatureGate.Add(ocmfeature.DefaultSpokeWorkFeatureGates),
		)
	})
	if ocmFeatureGatesOnce.err != nil {
		return fmt.Errorf("registering OCM feature gates: %w", ocmFeatureGatesOnce.err)
	}
	return nil
}
