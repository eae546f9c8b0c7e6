package reports

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// AddonOwner is the agent's ManagedClusterAddOn on the hub, the owner of every report the
// agent writes: disabling the addon on the cluster deletes the ManagedClusterAddOn, and
// the hub's garbage collector then deletes the cluster's reports with it, whether the
// agent still runs or not (its Deployment goes at the same time).
type AddonOwner struct {
	hub         client.Reader
	clusterName string

	mu  sync.Mutex
	ref *metav1.OwnerReference
}

// NewAddonOwner reads the ManagedClusterAddOn of cluster clusterName from hub, uncached.
func NewAddonOwner(hub client.Reader, clusterName string) *AddonOwner {
	return &AddonOwner{hub: hub, clusterName: clusterName}
}

// Reference is the owner reference to put on reports: the ManagedClusterAddOn last seen,
// read from the hub when none was seen yet. No ManagedClusterAddOn means the addon is
// being disabled: an error, so that no report outlives it.
func (o *AddonOwner) Reference(ctx context.Context) (metav1.OwnerReference, error) {
	o.mu.Lock()
	ref := o.ref
	o.mu.Unlock()
	if ref != nil {
		return *ref, nil
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := o.hub.Get(ctx, types.NamespacedName{Namespace: o.clusterName, Name: apps.AddonName}, mca)
	o.Observe(mca, err)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.OwnerReference{}, fmt.Errorf("the ManagedClusterAddOn %s/%s is gone (the addon is being disabled): not writing reports", o.clusterName, apps.AddonName)
		}
		return metav1.OwnerReference{}, fmt.Errorf("reading the ManagedClusterAddOn %s/%s, owner of the reports: %w", o.clusterName, apps.AddonName, err)
	}
	return AddonOwnerReference(mca), nil
}

// Observe records the result of reading the ManagedClusterAddOn (the lease's hub check
// reads it every minute): a new one (disabled and enabled again) changes the owner of
// the reports written from then on; NotFound forgets it.
func (o *AddonOwner) Observe(mca *addonv1alpha1.ManagedClusterAddOn, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		ref := AddonOwnerReference(mca)
		o.ref = &ref
	case apierrors.IsNotFound(err):
		o.ref = nil
	}
}

// AddonOwnerReference is the owner reference an ApplicationStatusReport gets to the
// ManagedClusterAddOn mca of its cluster. It is not a controller reference and does not
// block the owner's deletion (which would need update rights on the owner).
func AddonOwnerReference(mca *addonv1alpha1.ManagedClusterAddOn) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: addonv1alpha1.GroupVersion.String(),
		Kind:       "ManagedClusterAddOn",
		Name:       mca.Name,
		UID:        mca.UID,
	}
}
