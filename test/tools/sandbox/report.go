package main

// The MulticlusterApplicationSetReport as the sandbox prints it.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// maxErrorText bounds the ERRORS column of one row; the whole messages are in the report
// (kubectl get -o yaml). Argo CD's messages start with long prefixes ("Failed to load
// target state: failed to generate manifest for source 1 of 1: rpc error: ..."): 200
// keeps the part that says what is wrong.
const maxErrorText = 200

// reportTable renders the report as a table with a row per cluster entry, sorted by
// cluster and application, then a summary line.
func reportTable(r *appsv1alpha1.MulticlusterApplicationSetReport) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tAPP\tSYNC\tHEALTH\tAGENT\tERRORS")
	entries := slices.Clone(r.Statuses.ClusterConditions)
	slices.SortFunc(entries, func(a, b appsv1alpha1.ClusterCondition) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.App, b.App))
	})
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(e.Cluster), orDash(hubApplicationName(e.App)),
			orDash(e.SyncStatus), orDash(e.HealthStatus), agentText(e.AgentAvailable), errorsText(e.Conditions))
	}
	_ = w.Flush() // a strings.Builder does not fail
	s := r.Statuses.Summary
	fmt.Fprintf(&b, "%s clusters: %s synced, %s healthy, %s in progress (%s not synced, %s not healthy)\n",
		orZero(s.Clusters), orZero(s.Synced), orZero(s.Healthy), orZero(s.InProgress), orZero(s.NotSynced), orZero(s.NotHealthy))
	if t := r.Statuses.Truncation; t != nil && t.Message != "" {
		fmt.Fprintf(&b, "Truncated: %s\n", t.Message)
	}
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

// hubApplicationName is the hub Application's name out of a ClusterCondition's App,
// "<appset namespace>/<hub application name>/<ManifestWork namespace>/<ManifestWork name>";
// app itself when it is not of that form.
func hubApplicationName(app string) string {
	parts := strings.Split(app, "/")
	if len(parts) != 4 || parts[1] == "" {
		return app
	}
	return parts[1]
}

// agentText says whether the cluster's agent is available; "-" when unknown.
func agentText(available *bool) string {
	switch {
	case available == nil:
		return "-"
	case *available:
		return "available"
	default:
		return "unavailable"
	}
}

// errorsText is "<type>: <message>" for every condition, on one line and shortened to
// maxErrorText; "-" for none.
func errorsText(conditions []appsv1alpha1.Condition) string {
	if len(conditions) == 0 {
		return "-"
	}
	texts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		texts = append(texts, c.Type+": "+c.Message)
	}
	// One row per entry: newlines and tabs would break the table.
	text := strings.Join(strings.Fields(strings.Join(texts, "; ")), " ")
	if runes := []rune(text); len(runes) > maxErrorText {
		text = string(runes[:maxErrorText-1]) + "…"
	}
	return text
}

func orDash(s string) string { return cmp.Or(s, "-") }

func orZero(s string) string { return cmp.Or(s, "0") }
