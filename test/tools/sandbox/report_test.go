package main

import (
	"testing"

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
