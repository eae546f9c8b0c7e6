package reporttable

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestNeedsAttention(t *testing.T) {
	tests := map[string]struct {
		entry *builders.ClusterEntryBuilder
		want  bool
	}{
		"synced, healthy, agent available":     {entry: builders.ClusterEntry("c1").Status("Synced", "Healthy").Agent(true), want: false},
		"agent not said (hub-rendered, terse)": {entry: builders.ClusterEntry("c1").Status("Synced", "Healthy"), want: false},
		"agent unavailable":                    {entry: builders.ClusterEntry("c1").Status("Synced", "Healthy").Agent(false), want: true},
		"out of sync":                          {entry: builders.ClusterEntry("c1").Status("OutOfSync", "Healthy").Agent(true), want: true},
		"progressing":                          {entry: builders.ClusterEntry("c1").Status("Synced", "Progressing").Agent(true), want: true},
		"no status yet":                        {entry: builders.ClusterEntry("c1").Agent(true), want: true},
		"a warning on a healthy, synced entry": {
			entry: builders.ClusterEntry("c1").Status("Synced", "Healthy").Agent(true).Condition("SharedResourceWarning", "also in app b"),
			want:  true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := tc.entry.Build()
			if got := NeedsAttention(&e); got != tc.want {
				t.Errorf("NeedsAttention = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterApply(t *testing.T) {
	report := newReport("guestbook-app", allSynced,
		builders.ClusterEntry("cluster1").Status("Synced", "Healthy").Agent(true),
		builders.ClusterEntry("cluster2").Status("OutOfSync", "Healthy").Agent(true),
		builders.ClusterEntry("cluster3").Status("Synced", "Healthy").Agent(false),
	)
	clustersOf := func(r *appsv1alpha1.MulticlusterApplicationSetReport) []string {
		var out []string
		for _, e := range r.Statuses.ClusterConditions {
			out = append(out, e.Cluster)
		}
		return out
	}
	tests := map[string]struct {
		filter Filter
		want   []string
	}{
		"no filter keeps every entry":            {filter: Filter{}, want: []string{"cluster1", "cluster2", "cluster3"}},
		"attention":                              {filter: Filter{Attention: true}, want: []string{"cluster2", "cluster3"}},
		"clusters":                               {filter: Filter{Clusters: []string{"cluster3", "cluster1"}}, want: []string{"cluster1", "cluster3"}},
		"attention and clusters: both must hold": {filter: Filter{Attention: true, Clusters: []string{"cluster1", "cluster2"}}, want: []string{"cluster2"}},
		"a cluster the report has no entry for":  {filter: Filter{Clusters: []string{"cluster9"}}, want: nil},
		"attention on a cluster that needs none": {filter: Filter{Attention: true, Clusters: []string{"cluster1"}}, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := report.DeepCopy()
			got := tc.filter.Apply(&report)
			if diff := cmp.Diff(tc.want, clustersOf(got)); diff != "" {
				t.Errorf("entries kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(report.Statuses.Summary, got.Statuses.Summary); diff != "" {
				t.Errorf("the summary changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &report); diff != "" {
				t.Errorf("Apply changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFilterIsSet(t *testing.T) {
	for _, f := range []Filter{{Attention: true}, {Clusters: []string{"c1"}}} {
		if !f.IsSet() {
			t.Errorf("%+v: IsSet false", f)
		}
	}
	if (Filter{}).IsSet() {
		t.Error("the zero Filter: IsSet true")
	}
}
