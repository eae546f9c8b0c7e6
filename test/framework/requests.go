package framework

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RequestCounter counts what a client asks an API server, seen from outside the client:
//   - the create, update, patch and delete requests it sends for namespaced objects, by
//     namespace, resource (plural) and name (Of, OfResource, InNamespace), so tests can
//     prove that a controller writes once per change and never without one. It counts
//     requests, not changes: a patch that changes nothing still counts. A create names no
//     object in its path and counts under the empty name;
//   - every request that got an answer, whatever its status, by method and path
//     (Answered), so a test can see a process acted while it cannot see inside it.
type RequestCounter struct {
	mu       sync.Mutex
	writes   map[writeKey]int
	answered map[string]int
}

type writeKey struct{ namespace, resource, name string }

// NewRequestCounter returns an empty RequestCounter.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{writes: map[writeKey]int{}, answered: map[string]int{}}
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *RequestCounter) Wrap(cfg *rest.Config) *rest.Config {
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
func (c *RequestCounter) NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
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
func (c *RequestCounter) Of(resource, name string) int {
	return c.sum(func(k writeKey) bool { return k.resource == resource && k.name == name })
}

// OfResource returns how many writes were sent for any object of the resource (plural).
func (c *RequestCounter) OfResource(resource string) int {
	return c.sum(func(k writeKey) bool { return k.resource == resource })
}

// InNamespace returns how many writes were sent for objects of any resource in namespace.
func (c *RequestCounter) InNamespace(namespace string) int {
	return c.sum(func(k writeKey) bool { return k.namespace == namespace })
}

func (c *RequestCounter) sum(match func(writeKey) bool) int {
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

// Answered returns how many requests of method to path got an answer, whatever its status.
func (c *RequestCounter) Answered(method, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered[method+" "+path]
}

func (c *RequestCounter) add(k writeKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes[k]++
}

func (c *RequestCounter) addAnswered(req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered[req.Method+" "+req.URL.Path]++
}

type countingTransport struct {
	next    http.RoundTripper
	counter *RequestCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if k, ok := namespacedObject(req.URL.Path); ok {
			t.counter.add(k)
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		t.counter.addAnswered(req)
	}
	return resp, err
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
