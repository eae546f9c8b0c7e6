package aggregation

import (
	"fmt"
	"strings"
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fineEntry is a pulled Application its available agent reported Healthy and Synced.
func fineEntry(cluster string) appsv1alpha1.ClusterCondition {
	return appsv1alpha1.ClusterCondition{Cluster: cluster, App: "argocd/guestbook-" + cluster + "/" + cluster + "/w",
		SyncStatus: "Synced", HealthStatus: "Healthy", SyncRevision: "r1", AgentAvailable: ptr.To(true),
		LastReportedAt: &metav1.Time{Time: t0.Time}, Delivery: appsv1alpha1.DeliveryPull}
}

func TestUnlistListsWhatNeedsAttention(t *testing.T) {
	tests := map[string]struct {
		edit       func(*appsv1alpha1.ClusterCondition)
		wantListed bool
	}{
		"fine":                       {edit: func(*appsv1alpha1.ClusterCondition) {}},
		"not reported yet":           {edit: func(e *appsv1alpha1.ClusterCondition) { e.LastReportedAt = nil }, wantListed: true},
		"stale":                      {edit: func(e *appsv1alpha1.ClusterCondition) { e.Stale = true }, wantListed: true},
		"agent unavailable":          {edit: func(e *appsv1alpha1.ClusterCondition) { e.AgentAvailable = ptr.To(false) }, wantListed: true},
		"agent availability unknown": {edit: func(e *appsv1alpha1.ClusterCondition) { e.AgentAvailable = nil }, wantListed: true},
		"progressing":                {edit: func(e *appsv1alpha1.ClusterCondition) { e.HealthStatus = "Progressing" }, wantListed: true},
		"out of sync":                {edit: func(e *appsv1alpha1.ClusterCondition) { e.SyncStatus = "OutOfSync" }, wantListed: true},
		"a warning": {edit: func(e *appsv1alpha1.ClusterCondition) {
			e.Conditions = []appsv1alpha1.Condition{{Type: "SharedResourceWarning", Message: "shared"}}
		}, wantListed: true},
		"a failing resource": {edit: func(e *appsv1alpha1.ClusterCondition) {
			e.FailingResources = []appsv1alpha1.FailingResource{{Kind: "Deployment", Name: "guestbook-ui"}}
		}, wantListed: true},
		"a not-healthy child": {edit: func(e *appsv1alpha1.ClusterCondition) {
			e.NotHealthyChildren = []appsv1alpha1.FailingResource{{Kind: "Pod", Name: "guestbook-ui-1"}}
		}, wantListed: true},
		// No agent report holds a hub-rendered Application's detail.
		"hub-rendered": {edit: func(e *appsv1alpha1.ClusterCondition) {
			e.Delivery, e.AgentAvailable = appsv1alpha1.DeliveryHubRendered, nil
		}, wantListed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := appsv1alpha1.AppConditions{Summary: appsv1alpha1.ReportSummary{Clusters: "4"}}
			for i := range 4 {
				in.ClusterConditions = append(in.ClusterConditions, fineEntry(fmt.Sprintf("c%d", i)))
			}
			tc.edit(&in.ClusterConditions[2])
			original := in.ClusterConditions[2]

			if got := Unlist(in, 4); len(got.ClusterConditions) != 4 || got.Truncation != nil {
				t.Errorf("a report of 4 entries with upTo 4 lists %d and truncation %+v; want all 4, no truncation", len(got.ClusterConditions), got.Truncation)
			}
			got := Unlist(in, 3)
			wantListed, wantUnlisted := 0, int32(4)
			if tc.wantListed {
				wantListed, wantUnlisted = 1, 3
			}
			if len(got.ClusterConditions) != wantListed {
				t.Fatalf("%d entries listed, want %d: %+v", len(got.ClusterConditions), wantListed, got.ClusterConditions)
			}
			if tc.wantListed && got.ClusterConditions[0].Cluster != "c2" {
				t.Errorf("listed %s, want c2", got.ClusterConditions[0].Cluster)
			}
			if got.Truncation == nil || got.Truncation.UnlistedClusterConditions != wantUnlisted {
				t.Errorf("truncation %+v, want %d unlisted", got.Truncation, wantUnlisted)
			}
			limits := Limits{ListAllUpTo: 3}
			if msg := Bound(got, limits).Truncation.Message; !strings.Contains(msg, "has more than 3;") {
				t.Errorf("the message does not name the bound the report was built with: %q", msg)
			}
			if got.Summary != in.Summary {
				t.Errorf("summary changed: %+v", got.Summary)
			}
			if len(in.ClusterConditions) != 4 || in.ClusterConditions[2].Cluster != original.Cluster {
				t.Error("Unlist changed its input")
			}
		})
	}
}

// TestBuildOfALargeFleetListsOnlyWhatNeedsAttention: past ListAllEntriesUpTo entries the
// report counts every cluster, lists the one that fails, keeps the agents' own
// truncation, and says where the others are.
func TestBuildOfALargeFleetListsOnlyWhatNeedsAttention(t *testing.T) {
	n := appsv1alpha1.ListAllEntriesUpTo + 1
	in := fleet(n, n) // cluster 0 fails
	in.Reports[1].Status.Truncation = &appsv1alpha1.Truncation{OmittedResources: 7}
	got := Build(in, DefaultLimits)
	if len(got.ClusterConditions) != 1 || got.ClusterConditions[0].Cluster != "managed-cluster-0000" {
		t.Fatalf("listed %d entries, want only managed-cluster-0000's", len(got.ClusterConditions))
	}
	want := summary(n, n-1, 1, n-1, 1, 0)
	if got.Summary != want {
		t.Errorf("summary %+v, want %+v", got.Summary, want)
	}
	tr := got.Truncation
	if tr == nil || tr.UnlistedClusterConditions != int32(n-1) || tr.AgentOmittedResources != 7 {
		t.Fatalf("truncation %+v, want %d unlisted and the agents' 7 omitted resources", tr, n-1)
	}
	if !strings.Contains(tr.Message, "applicationstatusreports -A -l apps.open-cluster-management.io/report-applicationset=") {
		t.Errorf("the message does not say where the unlisted entries are: %q", tr.Message)
	}

	t.Run("at the bound every entry is listed", func(t *testing.T) {
		in := fleet(appsv1alpha1.ListAllEntriesUpTo, 0)
		got := Build(in, DefaultLimits)
		if len(got.ClusterConditions) != appsv1alpha1.ListAllEntriesUpTo || got.Truncation != nil {
			t.Errorf("listed %d, truncation %+v; want all %d and no truncation", len(got.ClusterConditions), got.Truncation, appsv1alpha1.ListAllEntriesUpTo)
		}
	})
	t.Run("an agent going away lists its clusters again", func(t *testing.T) {
		in := fleet(n, 0)
		in.Agents["managed-cluster-0005"] = unavailable()
		got := Build(in, DefaultLimits)
		if len(got.ClusterConditions) != 1 || got.ClusterConditions[0].Cluster != "managed-cluster-0005" {
			t.Errorf("listed %+v, want only managed-cluster-0005", got.ClusterConditions)
		}
	})
}
