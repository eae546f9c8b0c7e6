package aggregation

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	entry := func(cluster, sync, health string) appsv1alpha1.ClusterCondition {
		return appsv1alpha1.ClusterCondition{Cluster: cluster, App: cluster + "/" + sync + health, SyncStatus: sync, HealthStatus: health}
	}
	agent := func(e appsv1alpha1.ClusterCondition, available bool) appsv1alpha1.ClusterCondition {
		e.AgentAvailable = &available
		return e
	}
	tests := map[string]struct {
		entries []appsv1alpha1.ClusterCondition
		want    appsv1alpha1.ReportSummary
	}{
		"no entries: zeros, as strings": {
			want: summary(0, 0, 0, 0, 0, 0),
		},
		"healthy and synced": {
			entries: []appsv1alpha1.ClusterCondition{entry("c1", "Synced", "Healthy")},
			want:    summary(1, 1, 0, 1, 0, 0),
		},
		"Progressing counts as inProgress and notHealthy": {
			entries: []appsv1alpha1.ClusterCondition{entry("c1", "Synced", "Progressing")},
			want:    summary(1, 1, 0, 0, 1, 1),
		},
		"Unknown counts as not healthy and not synced": {
			entries: []appsv1alpha1.ClusterCondition{entry("c1", "Unknown", "Unknown")},
			want:    summary(1, 0, 1, 0, 1, 0),
		},
		"no status yet counts as not healthy and not synced": {
			entries: []appsv1alpha1.ClusterCondition{entry("c1", "", "")},
			want:    summary(1, 0, 1, 0, 1, 0),
		},
		"Degraded, Missing, Suspended and OutOfSync count as not": {
			entries: []appsv1alpha1.ClusterCondition{
				entry("c1", "OutOfSync", "Degraded"), entry("c2", "OutOfSync", "Missing"), entry("c3", "Synced", "Suspended"),
			},
			want: summary(3, 1, 2, 0, 3, 0),
		},
		"two Applications on one cluster: one cluster, two Applications counted": {
			entries: []appsv1alpha1.ClusterCondition{entry("c1", "Synced", "Healthy"), entry("c1", "OutOfSync", "Progressing")},
			want:    summary(1, 1, 1, 1, 1, 1),
		},
		"agents unavailable count clusters, not entries; available and unknown agents do not count": {
			entries: []appsv1alpha1.ClusterCondition{
				agent(entry("c1", "Synced", "Healthy"), false), agent(entry("c1", "Synced", "Healthy"), false),
				agent(entry("c2", "Synced", "Healthy"), false),
				agent(entry("c3", "Synced", "Healthy"), true),
				entry("c4", "Synced", "Healthy"), // hub-rendered: no agent
			},
			want: withAgentsUnavailable(summary(4, 5, 0, 5, 0, 0), 2),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(tc.entries)); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
