package framework

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// WriteCounter counts the create, update, patch and delete requests a client sends for
// namespaced objects, by resource (plural) and name, so tests can prove that a controller
// writes once per change and never without one. A create names no object in its path and
// counts under the empty name.
type WriteCounter struct {
	mu     sync.Mutex
	byName map[string]int
}

// NewWriteCounter returns an empty WriteCounter.
func NewWriteCounter() *WriteCounter {
	return &WriteCounter{byName: map[string]int{}}
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *WriteCounter) Wrap(cfg *rest.Config) *rest.Config {
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, counter: c}
	}
	return counted
}

// Of returns how many writes were sent for the resource (plural, e.g. "applications") and name.
func (c *WriteCounter) Of(resource, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[resource+"/"+name]
}

func (c *WriteCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName[key]++
}

type countingTransport struct {
	next    http.RoundTripper
	counter *WriteCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		// /apis/<group>/<version>/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if len(parts) >= 6 && parts[0] == "apis" && parts[3] == "namespaces" {
			name := ""
			if len(parts) >= 7 {
				name = parts[6]
			}
			t.counter.add(parts[5] + "/" + name)
		}
	}
	return t.next.RoundTrip(req)
}
