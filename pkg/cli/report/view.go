package report

import (
	"bytes"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/reporttable"
)

// view turns the reports read into what the command prints.
type view struct {
	query
	filter        reporttable.Filter
	allNamespaces bool
	// wide: the table with -o wide's columns; objects: the report objects with this
	// printer instead of the table.
	wide    bool
	objects printers.ResourcePrinter
}

// render is what v prints for reports: those of v's query, each narrowed to the entries
// of v's filter, as the table or as objects.
func (v *view) render(reports []appsv1alpha1.MulticlusterApplicationSetReport) ([]byte, error) {
	kept := make([]appsv1alpha1.MulticlusterApplicationSetReport, 0, len(reports))
	for i := range reports {
		r := v.filter.Apply(&reports[i])
		// Listing with a filter: a report with nothing to show is noise.
		if v.name == "" && v.filter.IsSet() && len(r.Statuses.ClusterConditions) == 0 {
			continue
		}
		r.SetGroupVersionKind(appsv1alpha1.GroupVersion.WithKind("MulticlusterApplicationSetReport"))
		kept = append(kept, *r)
	}
	var out bytes.Buffer
	if v.objects != nil {
		if err := v.printObjects(&out, kept); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	if len(kept) == 0 {
		fmt.Fprintln(&out, v.nothingFound())
		return out.Bytes(), nil
	}
	err := reporttable.Write(&out, kept, reporttable.Options{
		WithNamespace: v.allNamespaces, WithApplicationSet: v.name == "", Wide: v.wide, Now: time.Now(),
	})
	return out.Bytes(), err
}

// printObjects prints the one report asked for, or a list of those found.
func (v *view) printObjects(out *bytes.Buffer, reports []appsv1alpha1.MulticlusterApplicationSetReport) error {
	if v.name != "" {
		if len(reports) == 0 {
			return nil // watching for a report that does not exist (yet)
		}
		return v.objects.PrintObj(&reports[0], out)
	}
	list := &appsv1alpha1.MulticlusterApplicationSetReportList{Items: reports}
	return v.objects.PrintObj(list, out)
}

func (v *view) nothingFound() string {
	where := "in any namespace"
	if v.namespace != "" {
		where = "in namespace " + v.namespace
	}
	what := "No MulticlusterApplicationSetReports"
	switch {
	case v.name != "":
		what = "No report of ApplicationSet " + v.name
	case v.filter.IsSet():
		what = "No report entries match the filters"
	}
	return what + " " + where + "."
}
