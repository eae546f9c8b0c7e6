package framework

import (
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// UnthrottledCountingSent is a copy of cfg without client-side throttling, so that a
// benchmark measures the server's cost and not the client's limits, whose requests add the
// length of their bodies to sent.
func UnthrottledCountingSent(cfg *rest.Config, sent *atomic.Int64) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = -1, 0
	wrap := out.WrapTransport
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return sentCounter{next: rt, sent: sent}
	}
	return out
}

type sentCounter struct {
	next http.RoundTripper
	sent *atomic.Int64
}

func (c sentCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength > 0 {
		c.sent.Add(r.ContentLength)
	}
	return c.next.RoundTrip(r)
}
