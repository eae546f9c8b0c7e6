package resourcetree

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// signalChange sends an event on changed when the condition went from before to after
// (either may be nil) and says something else; one pending event is enough, the
// environment controller reads the condition when it reconciles.
func signalChange(changed chan<- event.GenericEvent, before, after *metav1.Condition) {
	if sameCondition(before, after) {
		return
	}
	select {
	case changed <- event.GenericEvent{}:
	default: // one is pending already
	}
}

// sameCondition says whether a and b say the same (either may be nil).
func sameCondition(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}
