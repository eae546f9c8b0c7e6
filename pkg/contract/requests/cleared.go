package requests

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// clearedRequests remembers the requests the hub cleared from each hub Application until
// the cache and the ManifestWork have caught up with the clear. Two reads would otherwise
// go wrong: a cache still showing the Application from before the clear, next to a
// ManifestWork that no longer carries the request, would make the request look new and
// run it again; and a request asked for again, equal to one cleared, next to a
// ManifestWork that still carries the acknowledged one, would look like the old one and
// be cleared without running.
//
// It is protocol state, not the hub controllers' own-write tracker (pkg/internal/ownwrites),
// though both remember a write the cache has not seen: the tracker forgets as soon as the
// cache shows a version outside its chain of consecutive writes, which is safe for a
// status mirror that recomputes everything, while here forgetting early runs a request
// twice or never. So this record keeps every version a clear was written over and the ids
// it removed, until the ManifestWork no longer carries them.
type clearedRequests struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]clearRecord
}

// clearRecord is what the clears of one Application left: the resourceVersions they were
// written over, the Application the last one returned, and the ids of the requests they
// removed. Each clear is locked to the version it was written over, so no other version
// lies between those and the last one returned.
type clearRecord struct {
	befores []string
	after   *unstructured.Unstructured
	ids     []string
}

func newClearedRequests() *clearedRequests {
	return &clearedRequests{byApp: map[types.NamespacedName]clearRecord{}}
}

func (c *clearedRequests) record(key types.NamespacedName, before string, after *unstructured.Unstructured, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	befores := []string{before}
	if old, ok := c.byApp[key]; ok && old.after.GetUID() == after.GetUID() {
		befores = append(slices.Clone(old.befores), before)
		ids = append(slices.Clone(old.ids), ids...)
	}
	c.byApp[key] = clearRecord{befores: befores, after: after.DeepCopy(), ids: ids}
}

// overlay returns the Application to decide on, given stored from the cache and the
// requests the current work carries: the one the last clear returned while the cache
// still shows a version a clear was written over, stored otherwise. It also returns the ids cleared
// that the work still carries. A record nothing needs any more is forgotten.
func (c *clearedRequests) overlay(key types.NamespacedName, stored *unstructured.Unstructured, carried Carried) (*unstructured.Unstructured, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.byApp[key]
	if !ok {
		return stored, nil
	}
	if rec.after.GetUID() != stored.GetUID() {
		delete(c.byApp, key)
		return stored, nil
	}
	if slices.Contains(rec.befores, stored.GetResourceVersion()) {
		return rec.after.DeepCopy(), rec.ids
	}
	var stillCarried []string
	for _, id := range rec.ids {
		if (carried.Operation != nil && carried.Operation.ID == id) || (carried.Refresh != nil && carried.Refresh.ID == id) {
			stillCarried = append(stillCarried, id)
		}
	}
	if len(stillCarried) == 0 {
		delete(c.byApp, key)
	}
	return stored, stillCarried
}

// forget drops what is remembered of a deleted Application.
func (c *clearedRequests) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byApp, key)
}
