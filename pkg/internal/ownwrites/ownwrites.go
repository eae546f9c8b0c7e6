// Package ownwrites lets a controller build its next write of an object on its own last
// write while the manager's cache has not seen it yet.
//
// Under a stream of changes the next reconcile of an object often starts before the cache
// has seen the controller's previous write: a write built on the cached copy carries its
// outdated resourceVersion, costs the API server a full decode and fails with a conflict,
// which costs a re-read and a second write. Building on the copy the controller wrote
// instead costs nothing and keeps the optimistic concurrency: a write by anyone else
// changes the cached resourceVersion to one the controller never wrote, and then the cache
// wins.
//
// A controller uses a Tracker in four places: Current on the cached copy before it builds
// its write, Wrote after a write succeeds (with the resourceVersion the write was built
// on), Forget after a write fails, and EventHandler on its watch of the written kind.
package ownwrites

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxChain bounds how many of its own consecutive writes of an object the tracker
// remembers while the cache has seen none of them; a cache further behind is simply used
// (and may cost a conflict).
const maxChain = 32

// Tracker remembers a controller's last write of each object until the cache has seen it.
// The zero value is ready to use and safe for concurrent use; a nil Tracker remembers
// nothing (Current returns the cache's copy).
type Tracker[T client.Object] struct {
	mu      sync.Mutex
	objects map[types.NamespacedName]ownWrite[T]
}

type ownWrite[T client.Object] struct {
	// chain holds the resourceVersions of the controller's consecutive writes, and the one
	// the first of them replaced; object is what the last one wrote, with the
	// resourceVersion the API server answered.
	chain  []string
	object T
}

// ahead tells whether the controller's last write is newer than seen, a version of the
// object the controller's own chain of writes started from or passed through.
func (w ownWrite[T]) ahead(seen client.Object) bool {
	return seen.GetResourceVersion() != w.object.GetResourceVersion() && slices.Contains(w.chain, seen.GetResourceVersion())
}

// Current is the copy of the object to build on: a copy of the controller's own last
// write when cached shows an older version of the controller's own chain of writes (under
// load the cache can lag several writes), else cached. cached may be nil (not in the
// cache).
func (t *Tracker[T]) Current(cached T) T {
	if t == nil || isNil(cached) {
		return cached
	}
	key := client.ObjectKeyFromObject(cached)
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.objects[key]
	if !ok {
		return cached
	}
	if last.ahead(cached) {
		return deepCopy(last.object)
	}
	// The cache has caught up, or someone else wrote: nothing to remember any more.
	delete(t.objects, key)
	return cached
}

// Wrote records the controller's write of the object from resourceVersion base to
// written (as the API server answered it; the tracker keeps its own copy).
func (t *Tracker[T]) Wrote(base string, written T) {
	if t == nil {
		return
	}
	key := client.ObjectKeyFromObject(written)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.objects == nil {
		t.objects = map[types.NamespacedName]ownWrite[T]{}
	}
	chain := []string{base}
	if last, ok := t.objects[key]; ok && last.object.GetResourceVersion() == base && len(last.chain) < maxChain {
		chain = last.chain
	}
	kept := deepCopy(written)
	// Managed fields are not what a controller builds on, and the cache drops them too.
	kept.SetManagedFields(nil)
	t.objects[key] = ownWrite[T]{chain: append(slices.Clip(chain), written.GetResourceVersion()), object: kept}
}

// Observed tells the tracker the cache now holds obj: the remembered write goes unless obj
// is still an older version of the controller's own chain. Wired to the informer's event
// handler, it keeps the tracker as small as the writes the cache has not seen yet.
func (t *Tracker[T]) Observed(obj client.Object) {
	key := client.ObjectKeyFromObject(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.objects[key]
	if !ok {
		return
	}
	if last.ahead(obj) {
		return
	}
	delete(t.objects, key)
}

// EventHandler tells the tracker what the cache holds: each update is Observed, each
// deletion forgotten, so the tracker remembers only the writes in flight, not a copy of
// every object the controller ever wrote. Wired to the watch of the written kind on the
// cache the controller reads (source.Kind), it enqueues nothing.
func (t *Tracker[T]) EventHandler() handler.TypedEventHandler[T, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[T, reconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[T], _ queue) {
			t.Observed(e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[T], _ queue) {
			t.Forget(client.ObjectKeyFromObject(e.Object))
		},
	}
}

// Forget drops what is remembered of the object key: it was deleted, or a write failed.
func (t *Tracker[T]) Forget(key types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.objects, key)
}

// Len is how many writes the tracker remembers.
func (t *Tracker[T]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.objects)
}

func deepCopy[T client.Object](obj T) T {
	copied, ok := obj.DeepCopyObject().(T)
	if !ok {
		// DeepCopyObject of every generated Kubernetes type returns its own type.
		panic("ownwrites: DeepCopyObject returned another type")
	}
	return copied
}

func isNil[T client.Object](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}
