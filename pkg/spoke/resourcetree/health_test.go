package resourcetree

import (
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

func TestResourceHealthPersistedCondition(t *testing.T) {
	inTree := func(namespaces string) *metav1.Condition {
		return &metav1.Condition{
			Type: apps.ConditionResourceHealthPersisted, Status: metav1.ConditionFalse, Reason: apps.ReasonResourceHealthInResourceTree,
			Message: "Argo CD keeps per-resource health out of the Applications (resourceHealthSource: appTree, Argo CD 3's default), " +
				"so the agent reads it from Argo CD's resource tree in Redis (condition ResourceTreeReadable says whether it can). " +
				"To keep it in the Applications, set " +
				`controller.resource.health.persist: "true" in the argocd-cmd-params-cm ConfigMap in ` + namespaces +
				" and restart the application controller.",
		}
	}
	persisted := &metav1.Condition{
		Type: apps.ConditionResourceHealthPersisted, Status: metav1.ConditionTrue, Reason: apps.ReasonResourceHealthPersisted,
		Message: "Argo CD keeps per-resource health in the Applications: reports carry each resource's health.",
	}
	tests := map[string]struct {
		inTreeControllers []string
		persisted         int
		want              *metav1.Condition
	}{
		"no reconciled Application: no condition": {},
		"every one persists":                      {persisted: 3, want: persisted},
		"one controller keeps it in the tree":     {inTreeControllers: []string{"argocd"}, want: inTree("namespace argocd")},
		// Two Argo CD instances, one persisting: the reports of the other lack the health.
		"one of two controllers keeps it in the tree": {inTreeControllers: []string{"argocd"}, persisted: 2, want: inTree("namespace argocd")},
		"two controllers keep it in the tree": {inTreeControllers: []string{"argocd", "team-argocd"},
			want: inTree("namespaces argocd, team-argocd")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := resourceHealthPersistedCondition(tt.inTreeControllers, tt.persisted)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("condition mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// reconciledApp is an Application Argo CD's controller in namespace controller reconciled,
// keeping resource health where source says.
func reconciledApp(namespace, name, controller string, source argov1alpha1.ResourceHealthLocation) *argov1alpha1.Application {
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	app.Status.ReconciledAt = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	app.Status.ControllerNamespace = controller
	app.Status.ResourceHealthSource = source
	return app
}

// TestResourceHealthSources follows the condition through a sequence of Applications the
// report controller sees, and checks that the environment controller is told exactly
// when the condition changes.
func TestResourceHealthSources(t *testing.T) {
	appTree := argov1alpha1.ResourceHealthLocationAppTree
	inline := argov1alpha1.ResourceHealthLocationInline
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	notReconciled := reconciledApp("argocd", "new", "", appTree)
	notReconciled.Status.ReconciledAt = nil

	s := NewHealthSources()
	for i, step := range []struct {
		key types.NamespacedName
		// app nil: the Application is gone or not reported.
		app        *argov1alpha1.Application
		wantStatus metav1.ConditionStatus // "" for no condition
		wantReason string
		// wantNamespaces is in the message of a False condition.
		wantNamespaces string
		wantEvent      bool
	}{
		// Argo CD has not compared it yet: its empty source says nothing.
		{key: key("argocd", "new"), app: notReconciled},
		{key: key("argocd", "a"), app: reconciledApp("argocd", "a", "argocd", inline),
			wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceHealthPersisted, wantEvent: true},
		{key: key("argocd", "b"), app: reconciledApp("argocd", "b", "argocd", inline),
			wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceHealthPersisted},
		// Argo CD restarted with persistence off: the first Application it reconciles says so.
		{key: key("argocd", "a"), app: reconciledApp("argocd", "a", "argocd", appTree),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd", wantEvent: true},
		{key: key("argocd", "b"), app: reconciledApp("argocd", "b", "argocd", appTree),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd"},
		// An Application in another namespace, reconciled by the same controller: the
		// setting is in the controller's namespace.
		{key: key("team-a", "c"), app: reconciledApp("team-a", "c", "argocd", appTree),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd"},
		// A second Argo CD instance, which does not say where it runs.
		{key: key("team-b", "d"), app: reconciledApp("team-b", "d", "", appTree),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespaces argocd, team-b", wantEvent: true},
		{key: key("team-b", "d"), app: nil,
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd", wantEvent: true},
		// Persistence turned on and the controller restarted: the condition turns True
		// once the last Application says so.
		{key: key("argocd", "a"), app: reconciledApp("argocd", "a", "argocd", inline),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd"},
		{key: key("argocd", "b"), app: reconciledApp("argocd", "b", "argocd", inline),
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonResourceHealthInResourceTree, wantNamespaces: "namespace argocd"},
		{key: key("team-a", "c"), app: reconciledApp("team-a", "c", "argocd", inline),
			wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceHealthPersisted, wantEvent: true},
		// Every Application gone: nothing tells any more (the environment controller then
		// leaves the last condition written).
		{key: key("argocd", "a"), wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceHealthPersisted},
		{key: key("argocd", "b"), wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonResourceHealthPersisted},
		{key: key("team-a", "c"), wantEvent: true},
	} {
		s.Observe(step.key, step.app)
		got := s.Condition()
		switch {
		case step.wantStatus == "" && got != nil:
			t.Errorf("step %d: condition %+v, want none", i, got)
		case step.wantStatus != "" && (got == nil || got.Status != step.wantStatus || got.Reason != step.wantReason):
			t.Errorf("step %d: condition %+v, want status %s, reason %s", i, got, step.wantStatus, step.wantReason)
		case step.wantNamespaces != "" && !strings.Contains(got.Message, "argocd-cmd-params-cm ConfigMap in "+step.wantNamespaces+" and restart"):
			t.Errorf("step %d: message %q does not name %s", i, got.Message, step.wantNamespaces)
		}
		select {
		case <-s.changed:
			if !step.wantEvent {
				t.Errorf("step %d: the environment controller was told of a change, want not", i)
			}
		default:
			if step.wantEvent {
				t.Errorf("step %d: the environment controller was not told of the change", i)
			}
		}
	}
}
