package ownwrites

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func configMap(resourceVersion, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: resourceVersion,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}},
		Data: map[string]string{"v": value},
	}
}

var key = types.NamespacedName{Namespace: "ns", Name: "cm"}

func TestCurrentBuildsOnOwnWritesTheCacheHasNotSeen(t *testing.T) {
	cases := []struct {
		name string
		// writes are the controller's writes, each {base, written}.
		writes [][2]string
		cached string
		// want is the resourceVersion Current returns; remembered whether the tracker
		// still remembers a write afterwards.
		want       string
		remembered bool
	}{
		{name: "nothing written", cached: "1", want: "1"},
		{name: "cache behind one write", writes: [][2]string{{"1", "2"}}, cached: "1", want: "2", remembered: true},
		{name: "cache caught up", writes: [][2]string{{"1", "2"}}, cached: "2", want: "2"},
		{name: "someone else wrote", writes: [][2]string{{"1", "2"}}, cached: "3", want: "3"},
		{name: "cache behind a chain of writes", writes: [][2]string{{"1", "2"}, {"2", "3"}, {"3", "4"}}, cached: "2", want: "4", remembered: true},
		{name: "chain from its start", writes: [][2]string{{"1", "2"}, {"2", "3"}}, cached: "1", want: "3", remembered: true},
		{name: "a write not on the last one starts a new chain", writes: [][2]string{{"1", "2"}, {"7", "8"}}, cached: "1", want: "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tracker Tracker[*corev1.ConfigMap]
			for _, w := range tc.writes {
				tracker.Wrote(w[0], configMap(w[1], "written "+w[1]))
			}
			got := tracker.Current(configMap(tc.cached, "cached "+tc.cached))
			if got.ResourceVersion != tc.want {
				t.Errorf("Current: resourceVersion %q, want %q", got.ResourceVersion, tc.want)
			}
			if got.ResourceVersion != tc.cached && got.Data["v"] != "written "+tc.want {
				t.Errorf("Current returned %q, want the controller's write %q", got.Data["v"], "written "+tc.want)
			}
			if remembered := tracker.Len() == 1; remembered != tc.remembered {
				t.Errorf("remembered a write: %t, want %t", remembered, tc.remembered)
			}
		})
	}
}

func TestCurrentReturnsACopyWithoutManagedFields(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	written := configMap("2", "mine")
	tracker.Wrote("1", written)
	written.Data["v"] = "changed by the caller after the write"

	got := tracker.Current(configMap("1", "old"))
	if got.Data["v"] != "mine" {
		t.Fatalf("Current returned %q: the tracker must keep its own copy of the write", got.Data["v"])
	}
	if len(got.ManagedFields) != 0 {
		t.Errorf("Current kept managed fields %v", got.ManagedFields)
	}
	got.Data["v"] = "changed by the next reconcile"
	if again := tracker.Current(configMap("1", "old")); again.Data["v"] != "mine" {
		t.Errorf("a second Current returned %q: each caller must get its own copy", again.Data["v"])
	}
}

func TestCurrentOfNothingCached(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	tracker.Wrote("1", configMap("2", "mine"))
	if got := tracker.Current(nil); got != nil {
		t.Errorf("Current(nil) = %v, want nil", got)
	}
}

func TestObservedForgetsOnceTheCacheHasTheWrite(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	tracker.Wrote("1", configMap("2", ""))
	tracker.Wrote("2", configMap("3", ""))

	tracker.Observed(configMap("2", ""))
	if tracker.Len() != 1 {
		t.Fatalf("forgot the last write when the cache saw only an earlier one of the chain")
	}
	tracker.Observed(configMap("3", ""))
	if tracker.Len() != 0 {
		t.Errorf("still remembers the write after the cache saw it")
	}

	tracker.Wrote("3", configMap("4", ""))
	tracker.Observed(configMap("9", ""))
	if tracker.Len() != 0 {
		t.Errorf("still remembers its write after the cache saw someone else's")
	}
	tracker.Observed(configMap("9", "")) // nothing remembered: no effect
}

func TestChainIsBounded(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	for i := 1; i <= maxChain+5; i++ {
		tracker.Wrote(fmt.Sprint(i), configMap(fmt.Sprint(i+1), ""))
	}
	// The chain restarted at the bound, so the very first version is no longer known as
	// the controller's own: the cache is used.
	if got := tracker.Current(configMap("1", "")); got.ResourceVersion != "1" {
		t.Errorf("Current built on a write %d writes ahead of the cache; want the cache beyond maxChain", maxChain+5)
	}
}

func TestForget(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	tracker.Wrote("1", configMap("2", ""))
	tracker.Forget(key)
	if got := tracker.Current(configMap("1", "")); got.ResourceVersion != "1" {
		t.Errorf("Current after Forget returned resourceVersion %q, want the cache's", got.ResourceVersion)
	}
}

func TestNilTrackerRemembersNothing(t *testing.T) {
	var tracker *Tracker[*corev1.ConfigMap]
	tracker.Wrote("1", configMap("2", "mine"))
	tracker.Forget(key)
	if got := tracker.Current(configMap("1", "cached")); got.Data["v"] != "cached" {
		t.Errorf("a nil tracker returned %q, want the cache's copy", got.Data["v"])
	}
}

// TestEventHandlerPrunes checks that the handler wired to the cache's watch drops a write
// once the cache has it, or once the object is deleted, and enqueues nothing.
func TestEventHandlerPrunes(t *testing.T) {
	var tracker Tracker[*corev1.ConfigMap]
	h := tracker.EventHandler()
	ctx := context.Background()

	tracker.Wrote("1", configMap("2", ""))
	h.Update(ctx, event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: configMap("0", ""), ObjectNew: configMap("1", "")}, nil)
	if tracker.Len() != 1 {
		t.Fatalf("forgot the write while the cache still showed the version it was built on")
	}
	h.Update(ctx, event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: configMap("1", ""), ObjectNew: configMap("2", "")}, nil)
	if tracker.Len() != 0 {
		t.Errorf("still remembers the write the cache has seen")
	}
	tracker.Wrote("2", configMap("3", ""))
	h.Delete(ctx, event.TypedDeleteEvent[*corev1.ConfigMap]{Object: configMap("2", "")}, nil)
	if tracker.Len() != 0 {
		t.Errorf("still remembers a write of a deleted object")
	}
}

// TestTrackerOfUnstructured: a controller that reads and writes objects unstructured
// tracks its writes the same way.
func TestTrackerOfUnstructured(t *testing.T) {
	object := func(resourceVersion, value string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		u.SetResourceVersion(resourceVersion)
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "test"}})
		_ = unstructured.SetNestedField(u.Object, value, "data", "v")
		return u
	}
	var tracker Tracker[*unstructured.Unstructured]
	tracker.Wrote("1", object("2", "mine"))
	got := tracker.Current(object("1", "cached"))
	if v, _, _ := unstructured.NestedString(got.Object, "data", "v"); got.GetResourceVersion() != "2" || v != "mine" {
		t.Errorf("Current = resourceVersion %q, value %q; want the controller's write 2, mine", got.GetResourceVersion(), v)
	}
	if len(got.GetManagedFields()) != 0 {
		t.Errorf("Current kept managed fields %v", got.GetManagedFields())
	}
	if got := tracker.Current(object("2", "cached")); got.GetResourceVersion() != "2" || tracker.Len() != 0 {
		t.Errorf("the cache caught up: Current = %q with %d remembered, want the cache's and none", got.GetResourceVersion(), tracker.Len())
	}
}
