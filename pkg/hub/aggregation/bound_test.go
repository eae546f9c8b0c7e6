package aggregation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

const mebibyte = 1 << 20

// fleet builds the inputs of an ApplicationSet pulled to n clusters, of which every
// failEvery-th fails (0: none). A failing Application reports the most an agent may: the
// maximum number of conditions with the longest messages, and many failing resources,
// each cluster with resources of its own names so the union is as large as it gets.
func fleet(n, failEvery int) Inputs {
	in := Inputs{ApplicationSet: guestbook, Agents: map[string]pullmodel.AgentAvailability{}}
	long := strings.Repeat("x", appsv1alpha1.MaxMessageLength)
	for i := range n {
		cluster := fmt.Sprintf("managed-cluster-%04d", i)
		hubApp := "guestbook-" + cluster
		revision := fmt.Sprintf("%040x", i)
		in.Agents[cluster] = available()
		if failEvery == 0 || i%failEvery != 0 {
			in.Works = append(in.Works, newWork(cluster, hubApp).feedback("Healthy", "Synced", revision, "Succeeded", "2026-11-01T10:00:00Z").obj())
			in.Reports = append(in.Reports, newReport(cluster, hubApp).state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, revision).
				operation(appsv1alpha1.OperationSucceeded, t0, "successfully synced (all tasks run)").
				resource("apps", "v1", "Deployment", "guestbook", "guestbook-ui", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusHealthy, "").
				resource("", "v1", "Service", "guestbook", "guestbook-ui", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusHealthy, "").obj())
			continue
		}
		in.Works = append(in.Works, newWork(cluster, hubApp).feedback("Degraded", "OutOfSync", revision, "Failed", "2026-11-01T10:00:00Z").obj())
		rep := newReport(cluster, hubApp).state(appsv1alpha1.HealthStatusDegraded, appsv1alpha1.SyncStatusOutOfSync, revision).
			operation(appsv1alpha1.OperationFailed, t0, long)
		for c := range appsv1alpha1.MaxConditions {
			rep.condition(fmt.Sprintf("SyncError%d", c), long)
		}
		for r := range 50 {
			rep.resource("apps", "v1", "Deployment", "guestbook", fmt.Sprintf("%s-deployment-%d", cluster, r),
				appsv1alpha1.SyncStatusOutOfSync, appsv1alpha1.HealthStatusDegraded, strings.Repeat("y", appsv1alpha1.MaxResourceMessageLength))
		}
		in.Reports = append(in.Reports, rep.obj())
	}
	return in
}

func reportSize(t *testing.T, in Inputs) (int, *appsv1alpha1.MulticlusterApplicationSetReport) {
	t.Helper()
	appSet := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: appSetNamespace, UID: "5d1c3c59-6f3e-4a4e-9c55-0c3d8f6f2a11"}}
	report := Desired(appSet, in, DefaultLimits)
	b, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	return len(b), report
}

// TestReportFor3000ClustersIsUnder1MiB measures the whole object as the API server stores
// it (JSON), with cluster and Application names of typical length.
func TestReportFor3000ClustersIsUnder1MiB(t *testing.T) {
	tests := map[string]struct {
		failEvery int
		// wantFirstError: every failing entry keeps the type of its first error,
		// agentAvailable and lastReportedAt.
		wantFirstError bool
		// wantListed entries are listed; the fine others are counted as unlisted.
		wantListed int
	}{
		"healthy fleet": {},
		"a tenth failing with the largest agent reports": {failEvery: 10, wantFirstError: true, wantListed: 300},
		"all failing with the largest agent reports":     {failEvery: 1, wantListed: 3000},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			size, report := reportSize(t, fleet(3000, tc.failEvery))
			t.Logf("report for 3000 clusters: %d bytes (%.2f MiB); %s", size, float64(size)/mebibyte, report.Statuses.Truncation.Message)
			if size >= mebibyte {
				t.Errorf("report is %d bytes, want under 1 MiB", size)
			}
			if len(report.Statuses.ClusterConditions) != tc.wantListed {
				t.Errorf("%d cluster entries listed, want %d", len(report.Statuses.ClusterConditions), tc.wantListed)
			}
			if got, want := report.Statuses.Truncation.UnlistedClusterConditions, int32(3000-tc.wantListed); got != want {
				t.Errorf("%d entries counted as unlisted, want %d", got, want)
			}
			if got := report.Statuses.Summary.Clusters; got != "3000" {
				t.Errorf("summary counts %s clusters, want 3000", got)
			}
			if report.Statuses.Truncation == nil || report.Statuses.Truncation.Message == "" {
				t.Error("the report does not say what it left out")
			}
			if !tc.wantFirstError {
				return
			}
			for _, e := range report.Statuses.ClusterConditions {
				if e.HealthStatus == "Healthy" {
					continue
				}
				if len(e.Conditions) == 0 || e.Conditions[0].Type != appsv1alpha1.ConditionOperationFailed {
					t.Fatalf("entry %s lost its first error: %+v", e.Cluster, e.Conditions)
				}
				if e.AgentAvailable == nil || e.LastReportedAt == nil {
					t.Fatalf("failing entry %s lost agentAvailable or lastReportedAt", e.Cluster)
				}
			}
		})
	}
}

func TestBoundLeavesOutEntriesOnlyAsALastResort(t *testing.T) {
	in, _ := build(fleet(40, 1), nil)
	// The last 10 entries are fine and are the first to go.
	for i := 30; i < 40; i++ {
		e := &in.ClusterConditions[i]
		e.HealthStatus, e.SyncStatus, e.Conditions, e.FailingResources = "Healthy", "Synced", nil, nil
	}
	limits := DefaultLimits
	limits.Budget = 25 * 330
	got := Bound(in, limits)
	if got.Truncation == nil || got.Truncation.OmittedClusterConditions < 10 {
		t.Fatalf("truncation = %+v, want at least the 10 fine entries left out", got.Truncation)
	}
	if size := jsonSize(got); size > limits.Budget+1024 {
		t.Errorf("bounded report is %d bytes, budget %d", size, limits.Budget)
	}
	for _, e := range got.ClusterConditions {
		if e.HealthStatus == "Healthy" {
			t.Errorf("fine entry %s kept while failing ones were left out", e.Cluster)
		}
	}
	if got.Summary != in.Summary {
		t.Errorf("summary changed by bounding: %+v, want %+v", got.Summary, in.Summary)
	}
}

func TestBoundFirstLevel(t *testing.T) {
	long := strings.Repeat("é", 600) // 600 characters, 1,200 bytes
	in := appsv1alpha1.AppConditions{
		ClusterConditions: []appsv1alpha1.ClusterCondition{{
			Cluster:    "c1",
			Conditions: make([]appsv1alpha1.Condition, 12),
			FailingResources: []appsv1alpha1.FailingResource{
				{Name: "a", Message: long}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}, {Name: "f"}, {Name: "g"},
			},
		}},
	}
	for i := range in.ClusterConditions[0].Conditions {
		in.ClusterConditions[0].Conditions[i] = appsv1alpha1.Condition{Type: fmt.Sprint("T", i), Message: long}
	}
	got := Bound(in, DefaultLimits)
	e := got.ClusterConditions[0]
	want := &appsv1alpha1.ReportTruncation{OmittedConditions: 2, OmittedFailingResources: 2, ShortenedMessages: 11}
	if diff := cmp.Diff(want, got.Truncation, cmpIgnoreMessage); diff != "" {
		t.Errorf("truncation (-want +got):\n%s", diff)
	}
	if len(e.Conditions) != 10 || len(e.FailingResources) != 5 {
		t.Errorf("%d conditions and %d failing resources, want 10 and 5", len(e.Conditions), len(e.FailingResources))
	}
	if m := e.Conditions[0].Message; utf8.RuneCountInString(m) != 512 || !strings.HasSuffix(m, "…") || !utf8Valid(m) {
		t.Errorf("message not shortened to 512 characters of valid UTF-8 ending in …: %d characters", utf8.RuneCountInString(m))
	}
	if in.ClusterConditions[0].Conditions[0].Message != long {
		t.Error("Bound changed its input")
	}
}

// TestTruncationCountsWhatTheAgentsLeftOut: an Application of 2,000 resources on two
// clusters is reported with 1,000 by each agent; the report's union holds what they
// reported and its truncation says how many the agents left out, even when the report
// itself cut nothing.
func TestTruncationCountsWhatTheAgentsLeftOut(t *testing.T) {
	in := Inputs{ApplicationSet: guestbook, Agents: map[string]pullmodel.AgentAvailability{}}
	for _, cluster := range []string{"c1", "c2"} {
		hubApp := cluster + "-guestbook"
		in.Agents[cluster] = available()
		in.Works = append(in.Works, newWork(cluster, hubApp).feedback("Healthy", "Synced", "r1", "", "").obj())
		rep := newReport(cluster, hubApp).state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1")
		for i := range appsv1alpha1.MaxResources {
			rep.resource("", "v1", "ConfigMap", "guestbook", fmt.Sprintf("cm-%04d", i), appsv1alpha1.SyncStatusSynced, "", "")
		}
		r := rep.obj()
		r.Status.Truncation = &appsv1alpha1.Truncation{OmittedResources: 1000}
		in.Reports = append(in.Reports, r)
	}
	got := Build(in, DefaultLimits)
	if len(got.Resources) != 1000 {
		t.Errorf("%d resources in the union, want the 1,000 reported", len(got.Resources))
	}
	if got.Truncation == nil {
		t.Fatal("no truncation: the report does not say the agents left out resources")
	}
	want := &appsv1alpha1.ReportTruncation{AgentOmittedResources: 2000}
	if diff := cmp.Diff(want, got.Truncation, cmpIgnoreMessage); diff != "" {
		t.Errorf("truncation (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Truncation.Message, "agents' reports left out 2000 resources") || strings.Contains(got.Truncation.Message, "size bound") {
		t.Errorf("message %q does not say (only) what the agents left out", got.Truncation.Message)
	}

	t.Run("with the report's own cut", func(t *testing.T) {
		limits := DefaultLimits
		limits.Levels = []Level{{Resources: 10, Conditions: 10, MessageLength: 512, FailingResources: 5}}
		got := Build(in, limits)
		want := &appsv1alpha1.ReportTruncation{OmittedResources: 990, AgentOmittedResources: 2000}
		if diff := cmp.Diff(want, got.Truncation, cmpIgnoreMessage); diff != "" {
			t.Errorf("truncation (-want +got):\n%s", diff)
		}
	})
}

func TestUnchangedInputsBuildTheSameReport(t *testing.T) {
	in := fleet(20, 2)
	// The order the cache lists objects in does not matter.
	reversed := in
	reversed.Works = append([]workv1.ManifestWork(nil), in.Works...)
	for i, j := 0, len(reversed.Works)-1; i < j; i, j = i+1, j-1 {
		reversed.Works[i], reversed.Works[j] = reversed.Works[j], reversed.Works[i]
	}
	if diff := cmp.Diff(Build(in, DefaultLimits), Build(reversed, DefaultLimits)); diff != "" {
		t.Errorf("reports differ (-first +second):\n%s", diff)
	}
}

var cmpIgnoreMessage = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
