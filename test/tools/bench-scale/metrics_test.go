package main

import (
	"strings"
	"testing"
)

const sampleMetrics = `# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 2
workqueue_depth{controller="aggregation",name="aggregation"} 3
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="work.open-cluster-management.io",resource="manifestworks",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.5
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="work.open-cluster-management.io",resource="manifestworks",scope="resource",subresource="status",verb="PATCH",version="v1"} 30
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 900
apiserver_request_body_size_bytes_sum{group="work.open-cluster-management.io",resource="manifestworks",verb="patch"} 4096
apiserver_request_body_size_bytes_count{group="work.open-cluster-management.io",resource="manifestworks",verb="patch"} 4
apiserver_watch_events_sizes_sum{group="work.open-cluster-management.io",resource="manifestworks",version="v1"} 10240
apiserver_watch_events_total{group="work.open-cluster-management.io",resource="manifestworks",version="v1"} 8
apiserver_terminated_watchers_total{group="argoproj.io",resource="applications"} 3
`

func TestParseRequests(t *testing.T) {
	got, err := parseRequests(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if got["GET"] != 12 || got["PATCH"] != 7 || got[conflictPrefix+"PATCH"] != 2 {
		t.Errorf("requests %v, want GET 12, PATCH 7 of which 2 answered 409", got)
	}
	if writes(got) != 7 || conflicts(got) != 2 || total(got) != 19 {
		t.Errorf("writes %v, conflicts %v, total %v; want 7, 2, 19", writes(got), conflicts(got), total(got))
	}
}

func TestParseAPIProfile(t *testing.T) {
	before, err := parseAPIProfile(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseAPIProfile(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	p := after.minus(before)
	mw := p.requests[apiCall{resource: "manifestworks/status", verb: "PATCH"}]
	if mw == nil || mw.count != 30 || mw.seconds != 1.5 {
		t.Errorf("manifestworks/status PATCH %+v, want 30 requests in 1.5 s", mw)
	}
	if b := p.bodies[apiCall{resource: "manifestworks", verb: "patch"}]; b == nil || b.events != 4 || b.bytes != 4096 {
		t.Errorf("manifestworks patch bodies %+v, want 4 of 4096 bytes", b)
	}
	if w := p.watch["manifestworks"]; w == nil || w.events != 8 || w.bytes != 10240 {
		t.Errorf("manifestworks watch events %+v, want 8 of 10240 bytes", w)
	}
	if n := p.terminated["applications"]; n != 3 {
		t.Errorf("applications watchers closed %v, want 3", n)
	}
	if got := terminatedWatchers(p.terminated); got != "applications 3" {
		t.Errorf("closed watchers printed as %q, want %q", got, "applications 3")
	}
	if again := after.minus(after); len(again.requests)+len(again.bodies)+len(again.watch)+len(again.terminated) != 0 {
		t.Errorf("nothing served between two equal readings, got %+v", again)
	}
}
