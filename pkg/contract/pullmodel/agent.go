package pullmodel

import (
	"context"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// AgentAvailability is what a cluster's ManagedClusterAddOn says about its argocd-pull
// agent. The addon lease the agent renews is what OCM turns into the Available condition.
type AgentAvailability struct {
	// Available is true when the Available condition is True.
	Available bool
	// Since is when the condition last changed, or when the addon was created if it has
	// no Available condition yet; nil when there is no ManagedClusterAddOn.
	Since *metav1.Time
	// Reason explains an unavailable agent in a few words.
	Reason string
}

// AgentAvailabilityOf reads the availability of the agent from its ManagedClusterAddOn;
// mca nil means the addon is not enabled on the cluster.
func AgentAvailabilityOf(mca *addonv1alpha1.ManagedClusterAddOn) AgentAvailability {
	if mca == nil {
		return AgentAvailability{Reason: "the argocd-pull addon is not enabled on the cluster"}
	}
	c := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	if c == nil {
		created := mca.CreationTimestamp
		return AgentAvailability{Since: &created, Reason: "the agent has not reported available yet"}
	}
	since := c.LastTransitionTime
	if c.Status == metav1.ConditionTrue {
		return AgentAvailability{Available: true, Since: &since}
	}
	return AgentAvailability{Since: &since, Reason: fmt.Sprintf("Available is %s (%s)", c.Status, c.Reason)}
}

// GetAgentAvailability reads the availability of cluster's agent through c. It lists the
// cluster namespace's addon without a deep copy rather than getting a copy of it: the
// aggregation reads every cluster's on each rebuild of a report, and under a churn of
// status changes the copies showed in the manager's CPU profile (docs/benchmarks.md,
// "What the figures decided").
// AgentAvailabilityOf only reads the object and returns values.
func GetAgentAvailability(ctx context.Context, c client.Reader, cluster string) (AgentAvailability, error) {
	addons := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := c.List(ctx, addons, client.InNamespace(cluster), client.UnsafeDisableDeepCopy); err != nil {
		return AgentAvailability{}, fmt.Errorf("listing ManagedClusterAddOns in %s: %w", cluster, err)
	}
	for i := range addons.Items {
		if addons.Items[i].Name == apps.AddonName {
			return AgentAvailabilityOf(&addons.Items[i]), nil
		}
	}
	return AgentAvailabilityOf(nil), nil
}

// GetAgentAddOn reads cluster's argocd-pull ManagedClusterAddOn; nil when the addon is
// not enabled there.
func GetAgentAddOn(ctx context.Context, c client.Reader, cluster string) (*addonv1alpha1.ManagedClusterAddOn, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: apps.AddonName}, mca)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting ManagedClusterAddOn %s/%s: %w", cluster, apps.AddonName, err)
	}
	return mca, nil
}

// AgentAvailabilityPredicate keeps events of argocd-pull ManagedClusterAddOns (not other
// addons') and, of their updates, those that change what AgentAvailabilityOf reads: the
// addon manager rewrites their status for many other reasons.
func AgentAvailabilityPredicate() predicate.Predicate {
	return predicate.And(
		predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == apps.AddonName }),
		UpdatesWhere(availabilityChanged),
	)
}

// availabilityChanged tells whether the Available condition of an argocd-pull
// ManagedClusterAddOn changed in a way AgentAvailabilityOf sees.
func availabilityChanged(oldMCA, newMCA *addonv1alpha1.ManagedClusterAddOn) bool {
	oldCond := meta.FindStatusCondition(oldMCA.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	newCond := meta.FindStatusCondition(newMCA.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	if (oldCond == nil) != (newCond == nil) {
		return true
	}
	if oldCond == nil {
		return false
	}
	return oldCond.Status != newCond.Status || oldCond.Reason != newCond.Reason ||
		!oldCond.LastTransitionTime.Equal(&newCond.LastTransitionTime)
}
