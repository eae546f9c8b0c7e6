package aggregation

import (
	"context"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func agentAddOn(cluster string, status metav1.ConditionStatus) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: apps.AddonName},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{{
			Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: status, Reason: "Test", LastTransitionTime: t0,
		}}},
	}
}

// TestAgentAvailabilitiesFollowTheWatch checks that the availability a rebuild reads is
// the watch's once it has seen the addon, and the cache's before and after its deletion.
func TestAgentAvailabilitiesFollowTheWatch(t *testing.T) {
	ctx := context.Background()
	// The cache says available; the watch will say otherwise, to tell the two apart.
	c := newFakeClient(t, nil, agentAddOn("c1", metav1.ConditionTrue))
	var agents agentAvailabilities
	var queued []string
	h := recordingAvailability(&agents, handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queued = append(queued, "create "+e.Object.GetNamespace())
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queued = append(queued, "update "+e.ObjectNew.GetNamespace())
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queued = append(queued, "delete "+e.Object.GetNamespace())
		},
	})
	availableIs := func(step string, want bool) {
		t.Helper()
		got, err := agents.get(ctx, c, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Available != want {
			t.Errorf("%s: available = %v, want %v", step, got.Available, want)
		}
	}

	availableIs("before any event (the cache)", true)
	h.Create(ctx, event.CreateEvent{Object: agentAddOn("c1", metav1.ConditionFalse)}, nil)
	availableIs("after a create", false)
	h.Update(ctx, event.UpdateEvent{ObjectOld: agentAddOn("c1", metav1.ConditionFalse), ObjectNew: agentAddOn("c1", metav1.ConditionUnknown)}, nil)
	got, _ := agents.get(ctx, c, "c1")
	if want := pullmodel.AgentAvailabilityOf(agentAddOn("c1", metav1.ConditionUnknown)); got.Reason != want.Reason {
		t.Errorf("after an update: reason %q, want %q", got.Reason, want.Reason)
	}
	h.Delete(ctx, event.DeleteEvent{Object: agentAddOn("c1", metav1.ConditionUnknown)}, nil)
	availableIs("after a delete (the cache again)", true)

	if want := []string{"create c1", "update c1", "delete c1"}; len(queued) != len(want) || queued[0] != want[0] || queued[1] != want[1] || queued[2] != want[2] {
		t.Errorf("events passed on: %v, want %v", queued, want)
	}
}
