package reports

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestDesiredReport(t *testing.T) {
	longName := strings.Repeat("n", 200)
	tests := map[string]struct {
		app        *argov1alpha1.Application
		wantName   string
		wantSource appsv1alpha1.ApplicationReportSource
		wantLabels map[string]string
	}{
		"standalone Application": {
			app:      builders.Application("guestbook").UID("uid-1").PulledFrom("hub-apps", "guestbook").Build(),
			wantName: "argocd.guestbook",
			wantSource: appsv1alpha1.ApplicationReportSource{Cluster: "c1", Namespace: "argocd", Name: "guestbook", UID: "uid-1",
				HubApplicationNamespace: "hub-apps", HubApplicationName: "guestbook"},
			wantLabels: map[string]string{
				apps.LabelReportManagedBy:      apps.ReportManagedByAgent,
				apps.LabelReportHubApplication: "hub-apps.guestbook",
			},
		},
		"owned by an ApplicationSet": {
			app: builders.Application("guestbook-c1").UID("uid-1").PulledFrom("hub-apps", "guestbook-c1").
				HostingApplicationSet("appsets/guestbook").Build(),
			wantName: "argocd.guestbook-c1",
			wantSource: appsv1alpha1.ApplicationReportSource{Cluster: "c1", Namespace: "argocd", Name: "guestbook-c1", UID: "uid-1",
				HubApplicationNamespace: "hub-apps", HubApplicationName: "guestbook-c1", ApplicationSet: "appsets/guestbook"},
			wantLabels: map[string]string{
				apps.LabelReportManagedBy:      apps.ReportManagedByAgent,
				apps.LabelReportHubApplication: "hub-apps.guestbook-c1",
				apps.LabelReportApplicationSet: "appsets.guestbook",
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := desiredReport(tt.app, nil, "c1", testOwner)
			if got.Name != tt.wantName || got.Namespace != "c1" {
				t.Errorf("report %s/%s, want c1/%s", got.Namespace, got.Name, tt.wantName)
			}
			if diff := cmp.Diff(tt.wantSource, got.Source); diff != "" {
				t.Errorf("source mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLabels, got.Labels); diff != "" {
				t.Errorf("labels mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]metav1.OwnerReference{testOwner}, got.OwnerReferences); diff != "" {
				t.Errorf("owner mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("long names give valid, distinct label values and names", func(t *testing.T) {
		a := desiredReport(builders.Application(longName+"a").PulledFrom("hub-apps", longName+"a").
			HostingApplicationSet("appsets/"+longName+"a").Build(), nil, "c1", testOwner)
		b := desiredReport(builders.Application(longName+"b").PulledFrom("hub-apps", longName+"b").
			HostingApplicationSet("appsets/"+longName+"b").Build(), nil, "c1", testOwner)
		for _, r := range []*appsv1alpha1.ApplicationStatusReport{a, b} {
			if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
				t.Errorf("report name %q: %v", r.Name, errs)
			}
			for k, v := range r.Labels {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q: %v", k, v, errs)
				}
			}
		}
		if a.Name == b.Name || a.Labels[apps.LabelReportHubApplication] == b.Labels[apps.LabelReportHubApplication] ||
			a.Labels[apps.LabelReportApplicationSet] == b.Labels[apps.LabelReportApplicationSet] {
			t.Errorf("two Applications share a report name or label value: %q %v, %q %v", a.Name, a.Labels, b.Name, b.Labels)
		}
	})
}

// testOwner is a ManagedClusterAddOn as AddonOwnerReference refers to it.
var testOwner = AddonOwnerReference(&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: apps.AddonName, Namespace: "c1", UID: "mca-uid"}})

func TestSameContent(t *testing.T) {
	base := desiredReport(builders.Application("guestbook").UID("uid-1").PulledFrom("hub", "guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Build(), nil, "c1", testOwner)
	tests := map[string]struct {
		change func(current *appsv1alpha1.ApplicationStatusReport)
		want   bool
	}{
		"identical":                  {change: func(*appsv1alpha1.ApplicationStatusReport) {}, want: true},
		"only observedAt differs":    {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.Status.ObservedAt = metav1.Now() }, want: true},
		"a label someone else added": {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.Labels["team"] = "x" }, want: true},
		"an owner someone else added": {change: func(c *appsv1alpha1.ApplicationStatusReport) {
			c.OwnerReferences = append(c.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other"})
		}, want: true},
		"no owner": {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.OwnerReferences = nil }},
		"the previous ManagedClusterAddOn as owner": {change: func(c *appsv1alpha1.ApplicationStatusReport) {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: testOwner.APIVersion, Kind: testOwner.Kind, Name: testOwner.Name, UID: "previous"}}
		}},
		"the sync revision differs":    {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.Status.Sync.Revision = "old" }},
		"the source UID differs":       {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.Source.UID = "old-uid" }},
		"an agent label is missing":    {change: func(c *appsv1alpha1.ApplicationStatusReport) { delete(c.Labels, apps.LabelReportHubApplication) }},
		"a stale ApplicationSet label": {change: func(c *appsv1alpha1.ApplicationStatusReport) { c.Labels[apps.LabelReportApplicationSet] = "old" }},
		"empty lists read back from the hub": {change: func(c *appsv1alpha1.ApplicationStatusReport) {
			c.Status.Conditions = []appsv1alpha1.ApplicationConditionReport{}
		}, want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			current := base.DeepCopy()
			tt.change(current)
			if got := sameContent(current, base); got != tt.want {
				t.Errorf("sameContent() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReportLabelValue(t *testing.T) {
	tests := map[string]struct {
		in          string
		wantSame    bool
		wantPrefix  string
		wantHashLen bool
	}{
		"short valid value kept":          {in: "hub-apps.guestbook", wantSame: true},
		"empty kept":                      {in: "", wantSame: true},
		"too long: prefix and hash":       {in: strings.Repeat("a", 80), wantPrefix: strings.Repeat("a", 46) + "-"},
		"invalid characters are replaced": {in: "ns/app", wantPrefix: "ns_app-"},
		"must start alphanumeric":         {in: "-x", wantPrefix: "x-"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := apps.ReportLabelValue(tt.in)
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Fatalf("ReportLabelValue(%q) = %q: %v", tt.in, got, errs)
			}
			if tt.wantSame && got != tt.in {
				t.Errorf("ReportLabelValue(%q) = %q, want it unchanged", tt.in, got)
			}
			if !tt.wantSame && (!strings.HasPrefix(got, tt.wantPrefix) || len(got) != len(tt.wantPrefix)+16) {
				t.Errorf("ReportLabelValue(%q) = %q, want %q followed by a 16-character hash", tt.in, got, tt.wantPrefix)
			}
		})
	}
}
