package report

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/reporttable"
)

func newReport(name string, clusterHealth ...string) appsv1alpha1.MulticlusterApplicationSetReport {
	r := appsv1alpha1.MulticlusterApplicationSetReport{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}}
	for i, health := range clusterHealth {
		r.Statuses.ClusterConditions = append(r.Statuses.ClusterConditions, appsv1alpha1.ClusterCondition{
			Cluster: "cluster" + string(rune('1'+i)), SyncStatus: "Synced", HealthStatus: health, AgentAvailable: ptr.To(true),
		})
	}
	return r
}

// jsonView is the view of -o json for q and filter.
func jsonView(t *testing.T, q query, filter reporttable.Filter) *view {
	t.Helper()
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme())
	pf.OutputFormat = ptr.To("json")
	p, err := pf.ToPrinter()
	if err != nil {
		t.Fatal(err)
	}
	return &view{query: q, filter: filter, objects: p}
}

func TestListingWithAFilterLeavesOutReportsWithNothingKept(t *testing.T) {
	reports := []appsv1alpha1.MulticlusterApplicationSetReport{newReport("fine", "Healthy"), newReport("degraded", "Healthy", "Degraded")}
	v := jsonView(t, query{namespace: "argocd"}, reporttable.Filter{Attention: true})
	text, err := v.render(reports)
	if err != nil {
		t.Fatal(err)
	}
	list := &appsv1alpha1.MulticlusterApplicationSetReportList{}
	if err := json.Unmarshal(text, list); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	var got []string
	for _, r := range list.Items {
		got = append(got, r.Name+":"+r.Statuses.ClusterConditions[0].Cluster)
		if r.Kind != "MulticlusterApplicationSetReport" || r.APIVersion != appsv1alpha1.GroupVersion.String() {
			t.Errorf("item %s printed as %s %s", r.Name, r.APIVersion, r.Kind)
		}
	}
	if diff := cmp.Diff([]string{"degraded:cluster2"}, got); diff != "" {
		t.Errorf("reports printed (-want +got):\n%s", diff)
	}
	if len(reports[1].Statuses.ClusterConditions) != 2 {
		t.Error("render changed the reports it was given")
	}
}

func TestOneReportIsPrintedEvenWithNothingKept(t *testing.T) {
	v := jsonView(t, query{namespace: "argocd", name: "fine"}, reporttable.Filter{Attention: true})
	text, err := v.render([]appsv1alpha1.MulticlusterApplicationSetReport{newReport("fine", "Healthy")})
	if err != nil {
		t.Fatal(err)
	}
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	if err := json.Unmarshal(text, r); err != nil || r.Name != "fine" || len(r.Statuses.ClusterConditions) != 0 {
		t.Errorf("printed %s (%v), want report fine without entries", text, err)
	}
}

func TestNothingFound(t *testing.T) {
	tests := map[string]struct {
		view view
		want string
	}{
		"a namespace":     {view: view{query: query{namespace: "argocd"}}, want: "No MulticlusterApplicationSetReports in namespace argocd.\n"},
		"all namespaces":  {view: view{allNamespaces: true}, want: "No MulticlusterApplicationSetReports in any namespace.\n"},
		"one report":      {view: view{query: query{namespace: "argocd", name: "web"}}, want: "No report of ApplicationSet web in namespace argocd.\n"},
		"nothing matched": {view: view{query: query{namespace: "argocd"}, filter: reporttable.Filter{Attention: true}}, want: "No report entries match the filters in namespace argocd.\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			text, err := tc.view.render(nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(text); got != tc.want {
				t.Errorf("render(nil) = %q, want %q", got, tc.want)
			}
		})
	}
}
