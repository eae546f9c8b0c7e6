package main

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func newReport(summary appsv1alpha1.ReportSummary, entries ...*builders.ClusterEntryBuilder) *appsv1alpha1.MulticlusterApplicationSetReport {
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	r.Statuses.Summary = summary
	for _, e := range entries {
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, e.Build())
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
			report: newReport(appsv1alpha1.ReportSummary{}, builders.ClusterEntry("cluster1").Status("Synced", "Healthy")),
			want:   false,
		},
		"a cluster without sync status": {
			report: newReport(appsv1alpha1.ReportSummary{}, builders.ClusterEntry("cluster1").Status("Synced", "Healthy"), builders.ClusterEntry("cluster2")),
			want:   false,
		},
		"every cluster with a sync status, healthy or not": {
			report: newReport(appsv1alpha1.ReportSummary{},
				builders.ClusterEntry("cluster1").Status("Synced", "Healthy"), builders.ClusterEntry("cluster2").Status("OutOfSync", "")),
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
				builders.ClusterEntry("cluster1").Status("Synced", "Progressing").Agent(true), builders.ClusterEntry("cluster2").Status("Synced", "Healthy").Agent(true)),
			want: true,
		},
		"agent availability unknown counts as available": {
			report: newReport(appsv1alpha1.ReportSummary{}, builders.ClusterEntry("cluster1").Status("Synced", "Healthy")),
			want:   true,
		},
		"an agent unavailable": {
			report: newReport(appsv1alpha1.ReportSummary{},
				builders.ClusterEntry("cluster1").Status("Synced", "Healthy").Agent(true),
				builders.ClusterEntry("cluster2").Status("Synced", "Healthy").Agent(false).Condition("AgentUnavailable", "since 10:00")),
			want: false,
		},
		"out of sync before the first sync": {
			report: newReport(appsv1alpha1.ReportSummary{}, builders.ClusterEntry("cluster1").Status("OutOfSync", "Missing").Agent(true)),
			want:   false,
		},
		"out of sync with the error that explains it": {
			report: newReport(appsv1alpha1.ReportSummary{},
				builders.ClusterEntry("cluster1").Status("Unknown", "Healthy").Agent(true).Condition("ComparisonError", "path does not exist")),
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
