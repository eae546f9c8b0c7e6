package agent

import (
	"context"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"open-cluster-management.io/addon-framework/pkg/lease"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// Deadlines of the health checks: addon-framework's lease updater calls them in line,
// once a minute (60 s, with up to 25 % jitter).
const (
	cacheSyncCheckTimeout = time.Second
	hubCheckTimeout       = 10 * time.Second
)

// healthChecks gate the addon Lease: it is renewed only while the agent's informers are
// synced and the hub answers the agent's own credentials, so the ManagedClusterAddOn's
// Available condition means "reports flow", not merely "the pod runs".
type healthChecks struct {
	managed  cache.Cache
	hubCache cache.Cache
	// hubReader reads the hub uncached, with the agent's credentials.
	hubReader   client.Reader
	clusterName string
	// owner learns the ManagedClusterAddOn the hub check reads.
	owner *addonOwner
	// hubDown remembers the last hub check, so only changes are logged.
	hubDown atomic.Bool
}

func newHealthChecks(managed, hubCache cache.Cache, hubReader client.Reader, clusterName string, owner *addonOwner) *healthChecks {
	return &healthChecks{managed: managed, hubCache: hubCache, hubReader: hubReader, clusterName: clusterName, owner: owner}
}

// leaseUpdater is addon-framework's lease updater for the addon Lease in namespace, gated
// by the checks in this order: the hub check second, so it is not spent while the
// informers cannot serve reports anyway (the framework stops at the first that fails).
func (h *healthChecks) leaseUpdater(kube kubernetes.Interface, namespace string) lease.LeaseUpdater {
	return lease.NewLeaseUpdater(kube, apps.AddonName, namespace, h.cachesSynced, h.hubWorks)
}

// cachesSynced is true when every informer of both caches has synced.
func (h *healthChecks) cachesSynced() bool {
	ctx, cancel := context.WithTimeout(context.Background(), cacheSyncCheckTimeout)
	defer cancel()
	synced := h.managed.WaitForCacheSync(ctx) && h.hubCache.WaitForCacheSync(ctx)
	countLeaseCheck(leaseCheckInformers, synced)
	if !synced {
		ctrl.Log.WithName("agent").WithName("lease").V(2).Info("Not renewing the addon lease: informers are not synced")
	}
	return synced
}

// hubWorks reads the agent's own ManagedClusterAddOn, the cheapest request its hub Role
// allows, with its hub credentials. NotFound still proves the hub answers and trusts them.
func (h *healthChecks) hubWorks() bool {
	ctx, cancel := context.WithTimeout(context.Background(), hubCheckTimeout)
	defer cancel()
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := h.hubReader.Get(ctx, types.NamespacedName{Namespace: h.clusterName, Name: apps.AddonName}, mca)
	h.owner.observe(mca, err)
	works := err == nil || apierrors.IsNotFound(err)
	countLeaseCheck(leaseCheckHub, works)
	log := ctrl.Log.WithName("agent").WithName("lease")
	if works {
		hubReachable.Set(1)
		if h.hubDown.Swap(false) {
			log.V(2).Info("The hub answers again: renewing the addon lease")
		}
	} else {
		hubReachable.Set(0)
		if !h.hubDown.Swap(true) {
			log.V(2).Info("Not renewing the addon lease: the hub does not answer", "error", err.Error())
		}
	}
	return works
}
