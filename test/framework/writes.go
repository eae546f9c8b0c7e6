package framework

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteCounter counts the create, update, patch and delete requests a client sends for
// namespaced objects, by namespace, resource (plural) and name, so tests can prove that a
// controller writes once per change and never without one. It counts requests, not
// changes: a patch that changes nothing still counts. A create names no object in its
// path and counts under the empty name.
type WriteCounter struct {
	mu     sync.Mutex
	writes map[writeKey]int
}

type writeKey struct{ namespace, resource, name string }

// NewWriteCounter returns an empty WriteCounter.
func NewWriteCounter() *WriteCounter {
	return &WriteCounter{writes: map[writeKey]int{}}
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *WriteCounter) Wrap(cfg *rest.Config) *rest.Config {
	counted := rest.CopyConfig(cfg)
	next := counted.WrapTransport
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if next != nil {
			rt = next(rt)
		}
		return &countingTransport{next: rt, counter: c}
	}
	return counted
}

// NewClient is a controller-runtime client.NewClientFunc (RunManager's WithNewClient)
// whose client's requests are counted. Only the client's: a manager's cache and event
// recorder keep connections of their own, so the count is what the controllers wrote,
// without the Events they recorded.
func (c *WriteCounter) NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	counted := c.Wrap(cfg)
	// The manager passes the HTTP client it shares with its cache; the counted one
	// replaces it.
	hc, err := rest.HTTPClientFor(counted)
	if err != nil {
		return nil, err
	}
	opts.HTTPClient = hc
	return client.New(counted, opts)
}

// Of returns how many writes were sent for the resource (plural, e.g. "applications") and
// name, in any namespace.
func (c *WriteCounter) Of(resource, name string) int {
	return c.sum(func(k writeKey) bool { return k.resource == resource && k.name == name })
}

// OfResource returns how many writes were sent for any object of the resource (plural).
func (c *WriteCounter) OfResource(resource string) int {
	return c.sum(func(k writeKey) bool { return k.resource == resource })
}

// InNamespace returns how many writes were sent for objects of any resource in namespace.
func (c *WriteCounter) InNamespace(namespace string) int {
	return c.sum(func(k writeKey) bool { return k.namespace == namespace })
}

func (c *WriteCounter) sum(match func(writeKey) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.writes {
		if match(k) {
			n += v
		}
	}
	return n
}

func (c *WriteCounter) add(k writeKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes[k]++
}

type countingTransport struct {
	next    http.RoundTripper
	counter *WriteCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if k, ok := namespacedObject(req.URL.Path); ok {
			t.counter.add(k)
		}
	}
	return t.next.RoundTrip(req)
}

// namespacedObject reads the namespace, resource and name (empty for a create) from the path
// of a request for a namespaced object:
//
//	/api/<version>/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
//	/apis/<group>/<version>/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
func namespacedObject(path string) (writeKey, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 5 && parts[0] == "api" && parts[2] == "namespaces":
		parts = parts[3:]
	case len(parts) >= 6 && parts[0] == "apis" && parts[3] == "namespaces":
		parts = parts[4:]
	default:
		return writeKey{}, false
	}
	k := writeKey{namespace: parts[0], resource: parts[1]}
	if len(parts) >= 3 {
		k.name = parts[2]
	}
	return k, true
}
