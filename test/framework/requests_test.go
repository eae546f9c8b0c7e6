package framework

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestNamespacedObject(t *testing.T) {
	tests := map[string]struct {
		path string
		want writeKey
		ok   bool
	}{
		"a group resource":       {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook", want: writeKey{"argocd", "applications", "guestbook"}, ok: true},
		"its status":             {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook/status", want: writeKey{"argocd", "applications", "guestbook"}, ok: true},
		"a create of one":        {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications", want: writeKey{"argocd", "applications", ""}, ok: true},
		"a core resource":        {path: "/api/v1/namespaces/argocd/secrets/cluster1-cluster-secret", want: writeKey{"argocd", "secrets", "cluster1-cluster-secret"}, ok: true},
		"a create of a core one": {path: "/api/v1/namespaces/argocd/secrets", want: writeKey{"argocd", "secrets", ""}, ok: true},
		"cluster-scoped":         {path: "/apis/cluster.open-cluster-management.io/v1/managedclusters/cluster1"},
		"a namespace itself":     {path: "/api/v1/namespaces/argocd"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := namespacedObject(tt.path)
			if got != tt.want || ok != tt.ok {
				t.Errorf("namespacedObject(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestRequestCounterCountsWhatWasSentAndAnswered runs requests through a counted transport
// against a loopback server: writes count by object, answers by method and path, and a
// request nobody answered counts as a write sent but not as answered.
func TestRequestCounterCountsWhatWasSentAndAnswered(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
	}))
	defer server.Close()
	c := NewRequestCounter()
	cfg := c.Wrap(&rest.Config{Host: server.URL})
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, url string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := rt.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	const app = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook"
	do(http.MethodPatch, server.URL+app)
	do(http.MethodPatch, server.URL+app)
	do(http.MethodGet, server.URL+app)

	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	do(http.MethodPut, "http://"+LoopbackAddress(ports[0])+app) // nothing listens there

	if got := c.Of("applications", "guestbook"); got != 3 {
		t.Errorf("writes of guestbook = %d, want 3 (two answered patches and one unanswered put)", got)
	}
	if got := c.Answered(http.MethodPatch, app); got != 2 {
		t.Errorf("answered patches = %d, want 2 (a 409 is an answer)", got)
	}
	if got := c.Answered(http.MethodGet, app); got != 1 {
		t.Errorf("answered gets = %d, want 1", got)
	}
	if got := c.Answered(http.MethodPut, app); got != 0 {
		t.Errorf("answered puts = %d, want 0: nothing listened", got)
	}
}
