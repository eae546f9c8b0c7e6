package manager

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// connectionCounter is an HTTP/2 TLS server that counts the connections it accepted.
type connectionCounter struct {
	*httptest.Server
	accepted atomic.Int32
}

func newConnectionCounter(t *testing.T) *connectionCounter {
	t.Helper()
	c := &connectionCounter{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	c.EnableHTTP2 = true
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.accepted.Add(1)
		}
	}
	c.StartTLS()
	t.Cleanup(c.Close)
	return c
}

// config is a client configuration that trusts the server.
func (c *connectionCounter) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate().Raw})
	return &rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func get(t *testing.T, hc *http.Client, url string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("answered over %s, want HTTP/2 (one connection for every stream)", resp.Proto)
	}
}

func TestWithOwnWatchConnection(t *testing.T) {
	srv := newConnectionCounter(t)
	cfg := srv.config()

	// What the manager's client and every other client of cfg get: one transport, so one
	// connection for all of them. This is why the watches need a client of their own.
	writes, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	others, err := rest.HTTPClientFor(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	get(t, writes, srv.URL)
	get(t, others, srv.URL)
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("two clients of one configuration opened %d connections, want 1 (client-go shares their transport)", n)
	}

	opts, err := WithOwnWatchConnection(cache.Options{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if opts.HTTPClient == nil {
		t.Fatal("the cache got no HTTP client of its own")
	}
	get(t, opts.HTTPClient, srv.URL)
	get(t, writes, srv.URL)
	get(t, opts.HTTPClient, srv.URL)
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("after the cache's requests the server accepted %d connections, want 2: one for the writes, one for the watches", n)
	}
}

func TestOwnConnectionClientKeepsTheCallersDial(t *testing.T) {
	srv := newConnectionCounter(t)
	cfg := srv.config()
	var dials atomic.Int32
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	writes, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	watches, err := ownConnectionClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get(t, writes, srv.URL)
	get(t, watches, srv.URL)
	if d, n := dials.Load(), srv.accepted.Load(); d != 2 || n != 2 {
		t.Errorf("the caller's dial ran %d times for %d connections, want 2 and 2", d, n)
	}
}
