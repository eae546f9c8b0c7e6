package pullmodel

import (
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestUpdatesWhere(t *testing.T) {
	calls := 0
	p := UpdatesWhere(func(oldW, newW *workv1.ManifestWork) bool {
		calls++
		return oldW.Name != newW.Name
	})
	a, b := &workv1.ManifestWork{}, &workv1.ManifestWork{}
	b.Name = "renamed"
	app := pulledApplication("a", "uid")
	tests := map[string]struct {
		got, want bool
	}{
		"create passes":             {got: p.Create(event.CreateEvent{Object: a}), want: true},
		"delete passes":             {got: p.Delete(event.DeleteEvent{Object: a}), want: true},
		"update that matters":       {got: p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: b}), want: true},
		"update that does not":      {got: p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: a.DeepCopy()})},
		"update of another kind":    {got: p.Update(event.UpdateEvent{ObjectOld: app, ObjectNew: app})},
		"update without old object": {got: p.Update(event.UpdateEvent{ObjectNew: b})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if calls != 2 {
		t.Errorf("the change function ran %d times, want 2 (only for updates of two ManifestWorks)", calls)
	}
}
