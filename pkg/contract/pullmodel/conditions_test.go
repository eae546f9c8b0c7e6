package pullmodel

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetHubConditions(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	spoke := argov1alpha1.ApplicationCondition{Type: "SyncError", Message: "spoke says no", LastTransitionTime: &earlier}
	invalid := HubCondition(ConditionInvalidSpec, "bad annotation")
	invalid.LastTransitionTime = &earlier
	applyErr := HubCondition(ConditionClusterApplyError, "not applied")
	applyErr.LastTransitionTime = &earlier

	t.Run("adds a propagation condition beside the others, stamped now", func(t *testing.T) {
		got, changed := SetHubConditions([]argov1alpha1.ApplicationCondition{spoke, applyErr}, PropagationConditionTypes,
			[]argov1alpha1.ApplicationCondition{HubCondition(ConditionInvalidSpec, "bad annotation")}, now)
		if !changed || len(got) != 3 || got[0].Message != spoke.Message || got[1].Message != applyErr.Message {
			t.Fatalf("got %+v changed=%v", got, changed)
		}
		if got[2].LastTransitionTime == nil || !got[2].LastTransitionTime.Equal(&now) {
			t.Fatalf("new condition not stamped now: %+v", got[2])
		}
	})
	t.Run("an unchanged condition keeps its time and writes nothing", func(t *testing.T) {
		in := []argov1alpha1.ApplicationCondition{spoke, invalid}
		got, changed := SetHubConditions(in, PropagationConditionTypes,
			[]argov1alpha1.ApplicationCondition{HubCondition(ConditionInvalidSpec, "bad annotation")}, now)
		if changed || !got[1].LastTransitionTime.Equal(&earlier) {
			t.Fatalf("got %+v changed=%v", got, changed)
		}
	})
	t.Run("clearing removes only the writer's own types", func(t *testing.T) {
		got, changed := SetHubConditions([]argov1alpha1.ApplicationCondition{spoke, invalid, applyErr}, PropagationConditionTypes, nil, now)
		if !changed || len(got) != 2 || got[0].Message != spoke.Message || got[1].Message != applyErr.Message {
			t.Fatalf("got %+v changed=%v", got, changed)
		}
	})
	t.Run("a spoke condition of a hub type is not the hub's", func(t *testing.T) {
		spokeInvalid := argov1alpha1.ApplicationCondition{Type: ConditionInvalidSpec, Message: "project not found"}
		got, changed := SetHubConditions([]argov1alpha1.ApplicationCondition{spokeInvalid}, PropagationConditionTypes, nil, now)
		if changed || len(got) != 1 {
			t.Fatalf("got %+v changed=%v", got, changed)
		}
	})
}

func TestSetSpokeConditions(t *testing.T) {
	invalid := HubCondition(ConditionInvalidSpec, "bad annotation")
	old := argov1alpha1.ApplicationCondition{Type: "SyncError", Message: "old"}
	fresh := argov1alpha1.ApplicationCondition{Type: "ComparisonError", Message: "fresh"}

	got, changed := SetSpokeConditions([]argov1alpha1.ApplicationCondition{old, invalid}, []argov1alpha1.ApplicationCondition{fresh})
	if !changed || len(got) != 2 || got[0].Message != "fresh" || got[1].Message != invalid.Message {
		t.Fatalf("got %+v changed=%v", got, changed)
	}
	if _, changed := SetSpokeConditions(got, []argov1alpha1.ApplicationCondition{fresh}); changed {
		t.Fatal("the same spoke conditions again changed something")
	}
	got, changed = SetSpokeConditions(got, nil)
	if !changed || len(got) != 1 || !IsHubCondition(got[0]) {
		t.Fatalf("clearing the spoke's conditions: got %+v changed=%v", got, changed)
	}
}
