package manager

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// WithOwnWatchConnection returns opts with an HTTP client of its own for the cache, so
// that the informers' lists and watches travel on a TCP connection of their own, not on
// the one every write of the manager shares.
//
// client-go keeps one transport per TLS configuration, so without this every request and
// watch of the process is a stream of one HTTP/2 connection, and the API server writes
// all of them through that connection's one serving goroutine, each watch event waiting
// for its turn behind the answers to the controllers' writes. Under a burst of writes
// (the propagation workers creating ManifestWorks) the watches fell behind, and the API
// server closes a watcher that does not take its events in time: each closure is followed
// by a re-watch that the API server serves by copying every event missed, and
// Applications are seen late. On a connection of their own, the watches keep up
// (docs/benchmarks.md, "Watches on a connection of their own").
func WithOwnWatchConnection(opts cache.Options, cfg *rest.Config) (cache.Options, error) {
	hc, err := ownConnectionClient(cfg)
	if err != nil {
		return opts, fmt.Errorf("creating the HTTP client of the manager's watches: %w", err)
	}
	opts.HTTPClient = hc
	return opts, nil
}

// ownConnectionClient is an HTTP client for cfg that shares no connection with any other
// client made from cfg (OwnConnection).
func ownConnectionClient(cfg *rest.Config) (*http.Client, error) {
	return rest.HTTPClientFor(OwnConnection(cfg))
}

// OwnConnection is a copy of cfg whose clients share no connection with those of any
// other configuration: a dial function of its own makes client-go build it a transport of
// its own rather than hand out the one it keeps for cfg's TLS configuration. A Dial cfg
// already has is kept (a copied Dial gets a new holder in the transport configuration,
// and the transport cache tells configurations apart by that holder). A cfg with a
// Transport of its own keeps it: its connections are then the caller's to manage.
func OwnConnection(cfg *rest.Config) *rest.Config {
	own := rest.CopyConfig(cfg)
	if own.Dial == nil {
		// client-go's own default dialer (k8s.io/apimachinery/pkg/util/net).
		own.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return own
}
