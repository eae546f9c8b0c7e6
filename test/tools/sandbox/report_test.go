package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// entry builds a cluster entry of the guestbook's report.
type entry appsv1alpha1.ClusterCondition

func newEntry(cluster string) *entry {
	return &entry{Cluster: cluster, App: "argocd/" + cluster + "-guestbook-app/" + cluster + "/" + cluster + "-guestbook-app-abcde"}
}

func (e *entry) status(sync, health string) *entry {
	e.SyncStatus, e.HealthStatus = sync, health
	return e
}

func (e *entry) agent(available bool) *entry {
	e.AgentAvailable = &available
	return e
}

func (e *entry) condition(typ, message string) *entry {
	e.Conditions = append(e.Conditions, appsv1alpha1.Condition{Type: typ, Message: message})
	return e
}

func (e *entry) obj() appsv1alpha1.ClusterCondition { return appsv1alpha1.ClusterCondition(*e) }

func newReport(summary appsv1alpha1.ReportSummary, entries ...*entry) *appsv1alpha1.MulticlusterApplicationSetReport {
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	r.Statuses.Summary = summary
	for _, e := range entries {
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, e.obj())
	}
	return r
}

func TestReportTable(t *testing.T) {
	tests := map[string]struct {
		report *appsv1alpha1.MulticlusterApplicationSetReport
		want   string
	}{
		"no entries yet": {
			report: newReport(appsv1alpha1.ReportSummary{}),
			want: "CLUSTER  APP  SYNC  HEALTH  AGENT  ERRORS\n" +
				"0 clusters: 0 synced, 0 healthy, 0 in progress (0 not synced, 0 not healthy)\n",
		},
		"two clusters synced and healthy, sorted by cluster": {
			report: newReport(
				appsv1alpha1.ReportSummary{Clusters: "2", Synced: "2", Healthy: "2", NotSynced: "0", NotHealthy: "0", InProgress: "0"},
				newEntry("cluster2").status("Synced", "Healthy").agent(true),
				newEntry("cluster1").status("Synced", "Healthy").agent(true),
			),
			want: "CLUSTER   APP                     SYNC    HEALTH   AGENT      ERRORS\n" +
				"cluster1  cluster1-guestbook-app  Synced  Healthy  available  -\n" +
				"cluster2  cluster2-guestbook-app  Synced  Healthy  available  -\n" +
				"2 clusters: 2 synced, 2 healthy, 0 in progress (0 not synced, 0 not healthy)\n",
		},
		"errors on one line, agent unknown or unavailable, status not reported yet": {
			report: newReport(
				appsv1alpha1.ReportSummary{Clusters: "2", NotSynced: "2", NotHealthy: "1"},
				newEntry("cluster1").status("OutOfSync", "Missing").agent(false).
					condition("AgentUnavailable", "since 10:00").
					condition("ComparisonError", "path\tguestbook/missing:\nno such directory"),
				newEntry("cluster2"),
			),
			want: "CLUSTER   APP                     SYNC       HEALTH   AGENT        ERRORS\n" +
				"cluster1  cluster1-guestbook-app  OutOfSync  Missing  unavailable  AgentUnavailable: since 10:00; ComparisonError: path guestbook/missing: no such directory\n" +
				"cluster2  cluster2-guestbook-app  -          -        -            -\n" +
				"2 clusters: 0 synced, 0 healthy, 0 in progress (2 not synced, 1 not healthy)\n",
		},
		"an App not in the four-part form is shown as is; truncation is said": {
			report: func() *appsv1alpha1.MulticlusterApplicationSetReport {
				e := newEntry("c1").status("Synced", "Progressing")
				e.App = "legacy-app"
				r := newReport(appsv1alpha1.ReportSummary{Clusters: "1", Synced: "1", InProgress: "1", NotHealthy: "1"}, e)
				r.Statuses.Truncation = &appsv1alpha1.ReportTruncation{Message: "3 resources left out"}
				return r
			}(),
			want: "CLUSTER  APP         SYNC    HEALTH       AGENT  ERRORS\n" +
				"c1       legacy-app  Synced  Progressing  -      -\n" +
				"1 clusters: 1 synced, 0 healthy, 1 in progress (0 not synced, 1 not healthy)\n" +
				"Truncated: 3 resources left out\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, reportTable(tc.report)); diff != "" {
				t.Errorf("reportTable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorsTextShortensLongMessages(t *testing.T) {
	long := make([]byte, 2*maxErrorText)
	for i := range long {
		long[i] = 'x'
	}
	got := []rune(errorsText([]appsv1alpha1.Condition{{Type: "SyncError", Message: string(long)}}))
	if len(got) != maxErrorText || got[len(got)-1] != '…' {
		t.Errorf("errorsText of a long message: %d runes ending in %q, want %d ending in …", len(got), got[len(got)-1], maxErrorText)
	}
}

func TestReportComplete(t *testing.T) {
	clusters := []string{"cluster1", "cluster2"}
	tests := map[string]struct {
		report *appsv1alpha1.MulticlusterApplicationSetReport
		want   bool
	}{
		"no report": {report: nil, want: false},
		"a cluster missing": {
			report: newReport(appsv1alpha1.ReportSummary{}, newEntry("cluster1").status("Synced", "Healthy")),
			want:   false,
		},
		"a cluster without sync status": {
			report: newReport(appsv1alpha1.ReportSummary{}, newEntry("cluster1").status("Synced", "Healthy"), newEntry("cluster2")),
			want:   false,
		},
		"every cluster with a sync status, healthy or not": {
			report: newReport(appsv1alpha1.ReportSummary{},
				newEntry("cluster1").status("Synced", "Healthy"), newEntry("cluster2").status("OutOfSync", "")),
			want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := reportComplete(tc.report, clusters); got != tc.want {
				t.Errorf("reportComplete = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReportSettled(t *testing.T) {
	tests := map[string]struct {
		report *appsv1alpha1.MulticlusterApplicationSetReport
		want   bool
	}{
		"synced, agents available": {
			report: newReport(appsv1alpha1.ReportSummary{},
				newEntry("cluster1").status("Synced", "Progressing").agent(true), newEntry("cluster2").status("Synced", "Healthy").agent(true)),
			want: true,
		},
		"agent availability unknown counts as available": {
			report: newReport(appsv1alpha1.ReportSummary{}, newEntry("cluster1").status("Synced", "Healthy")),
			want:   true,
		},
		"an agent unavailable": {
			report: newReport(appsv1alpha1.ReportSummary{},
				newEntry("cluster1").status("Synced", "Healthy").agent(true),
				newEntry("cluster2").status("Synced", "Healthy").agent(false).condition("AgentUnavailable", "since 10:00")),
			want: false,
		},
		"out of sync before the first sync": {
			report: newReport(appsv1alpha1.ReportSummary{}, newEntry("cluster1").status("OutOfSync", "Missing").agent(true)),
			want:   false,
		},
		"out of sync with the error that explains it": {
			report: newReport(appsv1alpha1.ReportSummary{},
				newEntry("cluster1").status("Unknown", "Healthy").agent(true).condition("ComparisonError", "path does not exist")),
			want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := reportSettled(tc.report); got != tc.want {
				t.Errorf("reportSettled = %v, want %v", got, tc.want)
			}
		})
	}
}
