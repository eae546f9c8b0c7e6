package main

// The MulticlusterApplicationSetReport as the sandbox prints it.

import (
	"slices"
	"strings"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/reporttable"
)

// reportTable is the report as `argocd-pull-addon report <name>` prints it.
func reportTable(r *appsv1alpha1.MulticlusterApplicationSetReport) string {
	var b strings.Builder
	// A strings.Builder does not fail.
	_ = reporttable.Write(&b, []appsv1alpha1.MulticlusterApplicationSetReport{*r}, reporttable.Options{})
	return b.String()
}

// reportComplete tells whether the report has an entry with a sync status for every one of
// clusters.
func reportComplete(r *appsv1alpha1.MulticlusterApplicationSetReport, clusters []string) bool {
	if r == nil {
		return false
	}
	for _, c := range clusters {
		if !slices.ContainsFunc(r.Statuses.ClusterConditions, func(e appsv1alpha1.ClusterCondition) bool {
			return e.Cluster == c && e.SyncStatus != ""
		}) {
			return false
		}
	}
	return true
}

// reportSettled tells whether every entry of the report is past the first moments of a
// new Application: its agent not unavailable (the addon becomes Available after the
// agent's first lease), and Synced, or not with a condition that says why (before its
// first sync an Application is OutOfSync with no error).
func reportSettled(r *appsv1alpha1.MulticlusterApplicationSetReport) bool {
	return !slices.ContainsFunc(r.Statuses.ClusterConditions, func(e appsv1alpha1.ClusterCondition) bool {
		agentUnavailable := e.AgentAvailable != nil && !*e.AgentAvailable
		unexplained := e.SyncStatus != string(appsv1alpha1.SyncStatusSynced) && len(e.Conditions) == 0
		return agentUnavailable || unexplained
	})
}
