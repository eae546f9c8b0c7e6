package pullmodel

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// UpdatesWhere filters the updates of objects of type T to those changed says matter;
// creations, deletions and generic events pass. An update whose objects are not both a T
// (a tombstone, a watch of another kind) is dropped rather than dereferenced.
func UpdatesWhere[T client.Object](changed func(oldObj, newObj T) bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldObj, ok := e.ObjectOld.(T)
			if !ok {
				return false
			}
			newObj, ok := e.ObjectNew.(T)
			if !ok {
				return false
			}
			return changed(oldObj, newObj)
		},
	}
}
