package reports

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// coalescingHandler enqueues the requests of an object's events after a delay. The
// workqueue keeps one entry per request and the earliest time it is due, so every event
// of a burst inside the window lands in that one entry: one reconcile, at most one write.
type coalescingHandler struct {
	delay time.Duration
	// delayOf, when set, is the delay of each request instead of delay (the resource tree
	// controller holds a request back until its Application may be written again).
	delayOf func(reconcile.Request) time.Duration
	// requests maps the object of an event to what to reconcile.
	requests func(client.Object) []reconcile.Request
	// observe, when set, sees every event first (the report reconciler forgets what it
	// wrote when someone else changed a report).
	observe func(obj client.Object, deleted bool)
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *coalescingHandler) enqueue(obj client.Object, deleted bool, q requestQueue) {
	if obj == nil {
		return
	}
	if h.observe != nil {
		h.observe(obj, deleted)
	}
	for _, r := range h.requests(obj) {
		delay := h.delay
		if h.delayOf != nil {
			delay = h.delayOf(r)
		}
		q.AddAfter(r, delay)
	}
}

func (h *coalescingHandler) Create(_ context.Context, e event.CreateEvent, q requestQueue) {
	h.enqueue(e.Object, false, q)
}

func (h *coalescingHandler) Update(_ context.Context, e event.UpdateEvent, q requestQueue) {
	h.enqueue(e.ObjectNew, false, q)
}

func (h *coalescingHandler) Delete(_ context.Context, e event.DeleteEvent, q requestQueue) {
	h.enqueue(e.Object, true, q)
}

func (h *coalescingHandler) Generic(_ context.Context, e event.GenericEvent, q requestQueue) {
	h.enqueue(e.Object, false, q)
}
