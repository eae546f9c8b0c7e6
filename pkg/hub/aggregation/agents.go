package aggregation

import (
	"context"
	"sync"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	"k8s.io/client-go/util/workqueue"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// agentAvailabilities is each cluster's agent availability as the controller's watch of
// the argocd-pull ManagedClusterAddOns last saw it. A rebuild reads the availability of
// every cluster of its ApplicationSet, and in a large fleet reading each addon from the
// cache took much of the controller's CPU (docs/benchmarks.md, "What the figures
// decided"). The watch's handler records the availability before it queues the
// ApplicationSets, so a rebuild it causes reads the new one; a cluster the watch has not
// told about is read from the cache.
type agentAvailabilities struct {
	mu        sync.RWMutex
	byCluster map[string]pullmodel.AgentAvailability
}

// get is cluster's agent availability: the watch's, or else read through c.
func (a *agentAvailabilities) get(ctx context.Context, c client.Reader, cluster string) (pullmodel.AgentAvailability, error) {
	a.mu.RLock()
	agent, ok := a.byCluster[cluster]
	a.mu.RUnlock()
	if ok {
		return agent, nil
	}
	return pullmodel.GetAgentAvailability(ctx, c, cluster)
}

// observe records the availability of obj, a cluster's argocd-pull ManagedClusterAddOn.
func (a *agentAvailabilities) observe(obj client.Object) {
	mca, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
	if !ok {
		// Not what the watch delivers; the cache is read instead.
		a.forget(obj)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byCluster == nil {
		a.byCluster = map[string]pullmodel.AgentAvailability{}
	}
	a.byCluster[mca.Namespace] = pullmodel.AgentAvailabilityOf(mca)
}

// forget drops the availability of obj's cluster: the addon is gone (the cache, updated
// before the watch's handlers run, says so when read).
func (a *agentAvailabilities) forget(obj client.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byCluster, obj.GetNamespace())
}

// recordingAvailability is next, recording each event's addon in agents first.
func recordingAvailability(agents *agentAvailabilities, next handler.EventHandler) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			agents.observe(e.Object)
			next.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			agents.observe(e.ObjectNew)
			next.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			agents.forget(e.Object)
			next.Delete(ctx, e, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			next.Generic(ctx, e, q)
		},
	}
}
