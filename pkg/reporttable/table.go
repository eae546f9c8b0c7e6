// Package reporttable is the per-cluster table of MulticlusterApplicationSetReports as
// `argocd-pull-addon report` and the sandbox print it: a metav1.Table for cli-runtime's
// table printer with a row per cluster entry, a summary line per report, and the filters
// that pick entries.
package reporttable

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// MaxErrorText bounds the ERRORS and FAILING cells of one row; the whole messages are in
// the report (-o yaml). Argo CD's messages start with long prefixes ("Failed to load
// target state: failed to generate manifest for source 1 of 1: rpc error: ..."): 200
// keeps the part that says what is wrong.
const MaxErrorText = 200

// Options say which columns a table has.
type Options struct {
	// WithNamespace adds a column with the report's namespace (reports of several namespaces).
	WithNamespace bool
	// WithApplicationSet adds a column with the report's name, its ApplicationSet's
	// (several reports in one table).
	WithApplicationSet bool
	// Wide shows the columns of -o wide: operation, revision, when reported, delivery
	// and failing resources.
	Wide bool
	// Now is what the REPORTED column counts ages to.
	Now time.Time
}

// wide marks a column printed only with -o wide (cli-runtime's table printer skips
// columns of another priority than 0 otherwise).
const wide = 1

// Table is the reports as a table with a row per cluster entry, sorted by namespace,
// ApplicationSet, cluster and application. It does not change reports.
func Table(reports []appsv1alpha1.MulticlusterApplicationSetReport, opts Options) *metav1.Table {
	t := &metav1.Table{}
	if opts.WithNamespace {
		t.ColumnDefinitions = append(t.ColumnDefinitions, column("Namespace", "The ApplicationSet's namespace", 0))
	}
	if opts.WithApplicationSet {
		t.ColumnDefinitions = append(t.ColumnDefinitions, column("ApplicationSet", "The ApplicationSet the report is of", 0))
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		column("Cluster", "The managed cluster", 0),
		column("App", "The hub Application delivered to the cluster", 0),
		column("Sync", "Argo CD's sync status on the cluster", 0),
		column("Health", "Argo CD's health status on the cluster", 0),
		column("Agent", "Whether the cluster's argocd-pull agent is available", 0),
		column("Errors", "The entry's conditions, errors first, shortened", 0),
		column("Operation", "Phase of the last sync operation", wide),
		column("Revision", "The revision (or, multi-source, revisions) the Application is synced to", wide),
		column("Reported", "How long ago the agent last observed the Application", wide),
		column("Delivery", "How the Application reaches the cluster: Pull or HubRendered", wide),
		column("Failing", "Resources not Synced or not Healthy, shortened", wide),
	)
	sorted := slices.Clone(reports)
	slices.SortFunc(sorted, func(a, b appsv1alpha1.MulticlusterApplicationSetReport) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range sorted {
		r := &sorted[i]
		entries := slices.Clone(r.Statuses.ClusterConditions)
		slices.SortFunc(entries, func(a, b appsv1alpha1.ClusterCondition) int {
			return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.App, b.App))
		})
		for j := range entries {
			var cells []any
			if opts.WithNamespace {
				cells = append(cells, r.Namespace)
			}
			if opts.WithApplicationSet {
				cells = append(cells, r.Name)
			}
			t.Rows = append(t.Rows, metav1.TableRow{Cells: append(cells, entryCells(&entries[j], opts.Now)...)})
		}
	}
	return t
}

func column(name, description string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Description: description, Priority: priority}
}

// entryCells are the cells of one entry, in the order of Table's columns after the
// report's own.
func entryCells(e *appsv1alpha1.ClusterCondition, now time.Time) []any {
	revision := e.SyncRevision
	if len(e.SyncRevisions) > 0 {
		revision = strings.Join(e.SyncRevisions, ",")
	}
	reported := ""
	if e.LastReportedAt != nil {
		reported = duration.HumanDuration(now.Sub(e.LastReportedAt.Time))
	}
	return []any{
		orDash(e.Cluster), orDash(HubApplicationName(e.App)), orDash(e.SyncStatus), orDash(e.HealthStatus),
		agentText(e.AgentAvailable), errorsText(e.Conditions),
		orDash(e.OperationStatePhase), orDash(revision), orDash(reported), orDash(string(e.Delivery)),
		failingText(e.FailingResources),
	}
}

// Write prints the reports as Table and cli-runtime's table printer lay them out, then
// a summary line per report (SummaryLine; prefixed with the report's name, and
// namespace, when the table has those columns) and what each report left out.
func Write(w io.Writer, reports []appsv1alpha1.MulticlusterApplicationSetReport, opts Options) error {
	table := Table(reports, opts)
	if len(table.Rows) == 0 {
		// The table printer prints nothing at all for a table without rows.
		if _, err := fmt.Fprintln(w, "No cluster entries."); err != nil {
			return err
		}
	} else if err := printers.NewTablePrinter(printers.PrintOptions{Wide: opts.Wide}).PrintObj(table, w); err != nil {
		return err
	}
	sorted := slices.Clone(reports)
	slices.SortFunc(sorted, func(a, b appsv1alpha1.MulticlusterApplicationSetReport) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range sorted {
		r := &sorted[i]
		prefix := ""
		switch {
		case opts.WithNamespace:
			prefix = r.Namespace + "/" + r.Name + ": "
		case opts.WithApplicationSet:
			prefix = r.Name + ": "
		}
		if _, err := fmt.Fprintf(w, "%s%s\n", prefix, SummaryLine(r.Statuses.Summary)); err != nil {
			return err
		}
		if t := r.Statuses.Truncation; t != nil && t.Message != "" {
			if _, err := fmt.Fprintf(w, "%sTruncated: %s\n", prefix, t.Message); err != nil {
				return err
			}
		}
	}
	return nil
}

// SummaryLine is a report's summary in words. A report written before the summary
// counted unavailable agents says nothing about them.
func SummaryLine(s appsv1alpha1.ReportSummary) string {
	agents := ""
	if s.AgentsUnavailable != "" {
		agents = ", " + s.AgentsUnavailable + " agents unavailable"
	}
	return fmt.Sprintf("%s clusters: %s synced, %s healthy, %s in progress (%s not synced, %s not healthy%s)",
		orZero(s.Clusters), orZero(s.Synced), orZero(s.Healthy), orZero(s.InProgress), orZero(s.NotSynced), orZero(s.NotHealthy), agents)
}

// HubApplicationName is the hub Application's name out of a ClusterCondition's App,
// "<appset namespace>/<hub application name>/<ManifestWork namespace>/<ManifestWork name>";
// app itself when it is not of that form.
func HubApplicationName(app string) string {
	parts := strings.Split(app, "/")
	if len(parts) != 4 || parts[1] == "" {
		return app
	}
	return parts[1]
}

// agentText says whether the cluster's agent is available; "-" when the entry does not
// say (hub-rendered, or terse).
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
// MaxErrorText; "-" for none.
func errorsText(conditions []appsv1alpha1.Condition) string {
	texts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		texts = append(texts, c.Type+": "+c.Message)
	}
	return oneLine(texts)
}

// failingText is "<Kind>/<name> <sync> <health>" for every failing resource, on one line
// and shortened to MaxErrorText; "-" for none.
func failingText(resources []appsv1alpha1.FailingResource) string {
	texts := make([]string, 0, len(resources))
	for _, r := range resources {
		texts = append(texts, strings.Join(slices.DeleteFunc([]string{r.Kind + "/" + r.Name, r.SyncStatus, r.HealthStatus},
			func(s string) bool { return s == "" }), " "))
	}
	return oneLine(texts)
}

// oneLine joins texts with "; " on one line (newlines and tabs would break the table),
// shortened to MaxErrorText; "-" for none.
func oneLine(texts []string) string {
	if len(texts) == 0 {
		return "-"
	}
	text := strings.Join(strings.Fields(strings.Join(texts, "; ")), " ")
	if runes := []rune(text); len(runes) > MaxErrorText {
		text = string(runes[:MaxErrorText-1]) + "…"
	}
	return text
}

func orDash(s string) string { return cmp.Or(s, "-") }

func orZero(s string) string { return cmp.Or(s, "0") }
