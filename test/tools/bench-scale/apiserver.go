package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/rest"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// apiProfile is what the hub API server served, by resource and verb, from its own
// metrics: where its CPU goes during a phase. Its CPU itself is only known per process,
// so request time (the handler's latency, which includes decoding, admission, etcd and
// encoding) and the bytes it decoded, encoded and sent to watchers stand in for it.
type apiProfile struct {
	requests map[apiCall]*apiCallStats
	// bodies are the request bodies decoded, by resource and the body metric's own verbs
	// (create, update, patch: server-side apply included).
	bodies map[apiCall]*watchStats
	watch  map[string]*watchStats // by resource
	// terminated are the watchers the API server closed because they did not take their
	// events in time (apiserver_terminated_watchers_total), by resource: each re-watches
	// and is sent again, from the watch cache, what it missed.
	terminated map[string]float64
}

// apiCall is a resource (with its subresource) and verb.
type apiCall struct{ resource, verb string }

type apiCallStats struct {
	count, seconds, responseBytes float64
}

// watchStats counts events (or bodies) and their bytes.
type watchStats struct{ events, bytes float64 }

// apiMetrics reads the hub API server's /metrics.
type apiMetrics struct {
	client *http.Client
	url    string
}

func newAPIMetrics(cfg *rest.Config) (*apiMetrics, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &apiMetrics{client: c, url: strings.TrimSuffix(cfg.Host, "/") + "/metrics"}, nil
}

func (m *apiMetrics) read() (*apiProfile, error) {
	resp, err := m.client.Get(m.url)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the API server's metrics: %s", resp.Status)
	}
	return parseAPIProfile(resp.Body)
}

func parseAPIProfile(r io.Reader) (*apiProfile, error) {
	p := &apiProfile{requests: map[apiCall]*apiCallStats{}, bodies: map[apiCall]*watchStats{}, watch: map[string]*watchStats{},
		terminated: map[string]float64{}}
	call := func(labels map[string]string) *apiCallStats {
		res := labels["resource"]
		if s := labels["subresource"]; s != "" {
			res += "/" + s
		}
		k := apiCall{resource: res, verb: labels["verb"]}
		if p.requests[k] == nil {
			p.requests[k] = &apiCallStats{}
		}
		return p.requests[k]
	}
	watched := func(labels map[string]string) *watchStats {
		k := labels["resource"]
		if p.watch[k] == nil {
			p.watch[k] = &watchStats{}
		}
		return p.watch[k]
	}
	body := func(labels map[string]string) *watchStats {
		k := apiCall{resource: labels["resource"], verb: labels["verb"]}
		if p.bodies[k] == nil {
			p.bodies[k] = &watchStats{}
		}
		return p.bodies[k]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, labels, v, ok := metricLine(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case "apiserver_request_duration_seconds_sum":
			call(labels).seconds += v
		case "apiserver_request_duration_seconds_count":
			call(labels).count += v
		case "apiserver_response_sizes_sum":
			call(labels).responseBytes += v
		case "apiserver_request_body_size_bytes_sum":
			body(labels).bytes += v
		case "apiserver_request_body_size_bytes_count":
			body(labels).events += v
		case "apiserver_watch_events_sizes_sum":
			watched(labels).bytes += v
		case "apiserver_watch_events_total":
			watched(labels).events += v
		case "apiserver_terminated_watchers_total":
			p.terminated[labels["resource"]] += v
		}
	}
	return p, sc.Err()
}

// metricLine splits a Prometheus text line into name, labels and value.
func metricLine(line string) (string, map[string]string, float64, bool) {
	open := strings.IndexByte(line, '{')
	end := strings.LastIndexByte(line, '}')
	if open < 0 || end < open || strings.HasPrefix(line, "#") {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	if err != nil {
		return "", nil, 0, false
	}
	labels := map[string]string{}
	for _, l := range strings.Split(line[open+1:end], ",") {
		if k, val, ok := strings.Cut(l, "="); ok {
			labels[k] = strings.Trim(val, `"`)
		}
	}
	return line[:open], labels, v, true
}

// minus is what the API server served between before and p.
func (p *apiProfile) minus(before *apiProfile) *apiProfile {
	out := &apiProfile{requests: map[apiCall]*apiCallStats{}, bodies: minusCounts(p.bodies, before.bodies),
		watch: minusCounts(p.watch, before.watch), terminated: map[string]float64{}}
	for k, n := range p.terminated {
		if d := n - before.terminated[k]; d > 0 {
			out.terminated[k] = d
		}
	}
	for k, s := range p.requests {
		b := before.requests[k]
		if b == nil {
			b = &apiCallStats{}
		}
		d := &apiCallStats{count: s.count - b.count, seconds: s.seconds - b.seconds, responseBytes: s.responseBytes - b.responseBytes}
		if d.count > 0 {
			out.requests[k] = d
		}
	}
	return out
}

func minusCounts[K comparable](now, before map[K]*watchStats) map[K]*watchStats {
	out := map[K]*watchStats{}
	for k, s := range now {
		b := before[k]
		if b == nil {
			b = &watchStats{}
		}
		if d := (&watchStats{events: s.events - b.events, bytes: s.bytes - b.bytes}); d.events > 0 {
			out[k] = d
		}
	}
	return out
}

// printAPIProfile prints the calls that took most of the API server's request time, the
// request bodies it decoded and the watch events it sent, by resource; per status change
// where changes > 0.
func printAPIProfile(w io.Writer, phase string, p *apiProfile, changes int) {
	if p == nil {
		return
	}
	per := func(v float64) float64 {
		if changes == 0 {
			return v
		}
		return v / float64(changes)
	}
	fmt.Fprintf(w, "hub API server during %s, by resource and verb, watches left out (per status change: %d changes):\n", phase, changes)
	calls := make([]apiCall, 0, len(p.requests))
	var allSeconds float64
	for k, s := range p.requests {
		if k.verb == "WATCH" || k.verb == "CONNECT" {
			// Long-running: their time is how long they stayed open.
			continue
		}
		calls = append(calls, k)
		allSeconds += s.seconds
	}
	sort.Slice(calls, func(i, j int) bool { return p.requests[calls[i]].seconds > p.requests[calls[j]].seconds })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resource\tverb\trequests\trequest s\tshare\trequest ms per change\tread response bytes per request\t")
	for i, k := range calls {
		if i == 12 {
			break
		}
		s := p.requests[k]
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.0f%%\t%.2f\t%s\t\n", k.resource, k.verb, s.count, s.seconds,
			100*s.seconds/max(allSeconds, 1e-9), 1000*per(s.seconds), framework.FormatBytes(int64(s.responseBytes/s.count)))
	}
	_ = tw.Flush()
	counted := func(m map[string]*watchStats, unit string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return m[keys[i]].bytes > m[keys[j]].bytes })
		parts := make([]string, 0, len(keys))
		for i, k := range keys {
			if i == 6 {
				parts = append(parts, fmt.Sprintf("%d more", len(keys)-i))
				break
			}
			s := m[k]
			parts = append(parts, fmt.Sprintf("%s %.0f %s, %s (%s each, %s per change)", k, s.events, unit,
				framework.FormatBytes(int64(s.bytes)), framework.FormatBytes(int64(s.bytes/s.events)), framework.FormatBytes(int64(per(s.bytes)))))
		}
		return strings.Join(parts, "; ")
	}
	bodies := map[string]*watchStats{}
	for k, s := range p.bodies {
		bodies[k.resource+" "+k.verb] = s
	}
	fmt.Fprintf(w, "request bodies decoded: %s\n", counted(bodies, "bodies"))
	fmt.Fprintf(w, "watch events sent: %s\n", counted(p.watch, "events"))
	fmt.Fprintf(w, "watchers closed for not keeping up: %s\n", terminatedWatchers(p.terminated))
}

// terminatedWatchers lists the closed watchers by resource, most first; "none" for none.
func terminatedWatchers(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
