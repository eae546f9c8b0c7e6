package appstatus

import (
	"context"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reportHubApplication is the hub Application an agent report's source names.
func reportHubApplication(obj client.Object) (types.NamespacedName, bool) {
	rep, ok := obj.(*appsv1alpha1.ApplicationStatusReport)
	if !ok {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: rep.Source.HubApplicationNamespace, Name: rep.Source.HubApplicationName}
	return key, key.Namespace != "" && key.Name != ""
}

func indexReportHubApplication(obj client.Object) []string {
	key, ok := reportHubApplication(obj)
	if !ok {
		return nil
	}
	return []string{hubApplicationKey(key.Namespace, key.Name)}
}

func mapReportToApplication(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := reportHubApplication(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// ReportChanged lets a report update through when what it says changed; the agent writes
// only on change, so this mostly drops resyncs. The aggregation uses it too.
func ReportChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldRep, ok := e.ObjectOld.(*appsv1alpha1.ApplicationStatusReport)
			if !ok {
				return false
			}
			newRep, ok := e.ObjectNew.(*appsv1alpha1.ApplicationStatusReport)
			if !ok {
				return false
			}
			return oldRep.Source != newRep.Source || !equality.Semantic.DeepEqual(oldRep.Status, newRep.Status) ||
				oldRep.DeletionTimestamp.IsZero() != newRep.DeletionTimestamp.IsZero()
		},
	}
}

// IsAgentAddon keeps the argocd-pull ManagedClusterAddOns, not other addons'.
func IsAgentAddon(obj client.Object) bool {
	return obj.GetName() == apps.AddonName
}

// AgentAvailabilityChanged lets a ManagedClusterAddOn update through when its Available
// condition changed status or transition time; the addon manager rewrites its status for
// many other reasons.
func AgentAvailabilityChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldMCA, ok := e.ObjectOld.(*addonv1alpha1.ManagedClusterAddOn)
			if !ok {
				return false
			}
			newMCA, ok := e.ObjectNew.(*addonv1alpha1.ManagedClusterAddOn)
			if !ok {
				return false
			}
			return AvailabilityChanged(oldMCA, newMCA)
		},
	}
}

// AvailabilityChanged tells whether the Available condition of an argocd-pull
// ManagedClusterAddOn changed in a way AgentAvailabilityOf sees.
func AvailabilityChanged(oldMCA, newMCA *addonv1alpha1.ManagedClusterAddOn) bool {
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

// mapAddonToApplications maps a cluster's agent addon to the hub Applications pulled to
// that cluster: those its ManifestWorks point to.
func (r *Reconciler) mapAddonToApplications(ctx context.Context, obj client.Object) []reconcile.Request {
	works := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(obj.GetNamespace())); err != nil {
		// A map function cannot return an error; the cache only fails when it is not
		// started, and the next event maps again.
		ctrl.LoggerFrom(ctx).Error(err, "Listing ManifestWorks of a cluster whose agent availability changed", "cluster", obj.GetNamespace())
		return nil
	}
	var requests []reconcile.Request
	for i := range works.Items {
		if key, ok := hubApplication(&works.Items[i]); ok && hasPullLabel(&works.Items[i]) {
			requests = append(requests, reconcile.Request{NamespacedName: key})
		}
	}
	return requests
}
