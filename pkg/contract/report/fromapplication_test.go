package report

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestFromApplication(t *testing.T) {
	finished := metav1.NewTime(t0.Add(60e9))
	long := strings.Repeat("é", appsv1alpha1.MaxMessageLength+10)
	tests := map[string]struct {
		app  *argov1alpha1.Application
		want appsv1alpha1.ApplicationReportStatus
	}{
		"no status yet: an empty report": {
			app:  builders.Application("new").Build(),
			want: appsv1alpha1.ApplicationReportStatus{},
		},
		"synced and healthy, resources with health": {
			app: builders.Application("guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "abc123").
				Health(health.HealthStatusHealthy, "").
				OperationState(operation(synccommon.OperationSucceeded, "successfully synced (all tasks run)", true)).
				Resource(resource("apps", "Deployment", "guestbook", "ui", argov1alpha1.SyncStatusCodeSynced, healthOf(health.HealthStatusHealthy, ""))).
				Resource(resource("", "Service", "guestbook", "ui", argov1alpha1.SyncStatusCodeSynced, healthOf(health.HealthStatusHealthy, ""))).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync:   appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "abc123"},
				Health: appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy},
				OperationState: &appsv1alpha1.OperationStateReport{
					Phase: appsv1alpha1.OperationSucceeded, Message: "successfully synced (all tasks run)",
					StartedAt: &t0, FinishedAt: &finished,
				},
				Resources: []appsv1alpha1.ResourceStatusReport{
					{Group: "", Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "ui", Status: appsv1alpha1.SyncStatusSynced,
						Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy}},
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui", Status: appsv1alpha1.SyncStatusSynced,
						Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy}},
				},
			},
		},
		"health in the app tree (Argo CD v3): resources without health, source said": {
			app: builders.Application("v3").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Health(health.HealthStatusProgressing, "").
				ResourceHealthSource(argov1alpha1.ResourceHealthLocationAppTree).
				Resource(resource("apps", "Deployment", "ns", "web", argov1alpha1.SyncStatusCodeSynced, nil)).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync:                 appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "abc"},
				Health:               appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusProgressing},
				ResourceHealthSource: appsv1alpha1.ResourceHealthSourceAppTree,
				Resources: []appsv1alpha1.ResourceStatusReport{
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced},
				},
			},
		},
		"sync error with a failing resource": {
			app: builders.Application("broken").Sync(argov1alpha1.SyncStatusCodeOutOfSync, "def").
				Health(health.HealthStatusDegraded, "").
				OperationState(operation(synccommon.OperationFailed, "one or more objects failed to apply", true)).
				Condition(condition(argov1alpha1.ApplicationConditionSyncError, "Failed sync attempt: one or more objects failed to apply")).
				Resource(resource("apps", "Deployment", "ns", "web", argov1alpha1.SyncStatusCodeOutOfSync,
					healthOf(health.HealthStatusDegraded, "Deployment exceeded its progress deadline"))).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync:   appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusOutOfSync, Revision: "def"},
				Health: appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded},
				OperationState: &appsv1alpha1.OperationStateReport{
					Phase: appsv1alpha1.OperationFailed, Message: "one or more objects failed to apply", StartedAt: &t0, FinishedAt: &finished,
				},
				Conditions: []appsv1alpha1.ApplicationConditionReport{{
					Type: "SyncError", Message: "Failed sync attempt: one or more objects failed to apply", LastTransitionTime: &t0,
				}},
				Resources: []appsv1alpha1.ResourceStatusReport{{
					Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusOutOfSync,
					Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "Deployment exceeded its progress deadline"},
				}},
			},
		},
		"comparison error and a warning, in Argo CD's order": {
			app: builders.Application("cmp").Sync(argov1alpha1.SyncStatusCodeUnknown, "").Health(health.HealthStatusHealthy, "").
				Condition(condition(argov1alpha1.ApplicationConditionRepeatedResourceWarning, "Resource /Service/ns/ui appeared 2 times")).
				Condition(condition(argov1alpha1.ApplicationConditionComparisonError, "rpc error: repository not found")).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync:   appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusUnknown},
				Health: appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy},
				Conditions: []appsv1alpha1.ApplicationConditionReport{
					{Type: "RepeatedResourceWarning", Message: "Resource /Service/ns/ui appeared 2 times", LastTransitionTime: &t0},
					{Type: "ComparisonError", Message: "rpc error: repository not found", LastTransitionTime: &t0},
				},
			},
		},
		"running operation: no finish time": {
			app: builders.Application("running").OperationState(operation(synccommon.OperationRunning, "waiting for healthy state", false)).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				OperationState: &appsv1alpha1.OperationStateReport{Phase: appsv1alpha1.OperationRunning, Message: "waiting for healthy state", StartedAt: &t0},
			},
		},
		"operation without a known phase is left out": {
			app:  builders.Application("odd").OperationState(operation("Paused", "?", false)).Build(),
			want: appsv1alpha1.ApplicationReportStatus{},
		},
		"values unknown to this version become Unknown": {
			app: builders.Application("future").Sync("Drifting", "").Health("Wobbly", "").
				Resource(resource("", "ConfigMap", "ns", "c", "Drifting", healthOf("Wobbly", ""))).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync:   appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusUnknown},
				Health: appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusUnknown},
				Resources: []appsv1alpha1.ResourceStatusReport{{
					Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c", Status: appsv1alpha1.SyncStatusUnknown,
					Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusUnknown},
				}},
			},
		},
		"multi-source revisions": {
			app: builders.Application("multi").Sync(argov1alpha1.SyncStatusCodeSynced, "").Revisions("a1", "b2").Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Sync: appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revisions: []string{"a1", "b2"}},
			},
		},
		"long messages are cut and counted": {
			app: builders.Application("long").Health(health.HealthStatusDegraded, long).
				Condition(condition(argov1alpha1.ApplicationConditionSyncError, long)).Build(),
			want: appsv1alpha1.ApplicationReportStatus{
				Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: long[:2*(appsv1alpha1.MaxMessageLength-1)] + "…"},
				Conditions: []appsv1alpha1.ApplicationConditionReport{{Type: "SyncError", Message: long[:2*(appsv1alpha1.MaxMessageLength-1)] + "…", LastTransitionTime: &t0}},
				Truncation: &appsv1alpha1.Truncation{ShortenedMessages: 2},
			},
		},
		"resources without kind or name are left out and counted": {
			app: builders.Application("invalid").Resource(resource("", "", "ns", "x", argov1alpha1.SyncStatusCodeSynced, nil)).
				Resource(resource("", "ConfigMap", "ns", "", argov1alpha1.SyncStatusCodeSynced, nil)).Build(),
			want: appsv1alpha1.ApplicationReportStatus{Truncation: &appsv1alpha1.Truncation{OmittedResources: 2}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromApplication(tt.app, nil)); diff != "" {
				t.Errorf("FromApplication() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromApplicationBoundsLists(t *testing.T) {
	tests := map[string]struct {
		app               *argov1alpha1.Application
		wantResources     int
		wantConditions    int
		wantRevisions     int
		wantTruncation    *appsv1alpha1.Truncation
		wantFirstResource string
		wantConditionType string
	}{
		"more resources than the report holds: the unhealthy ones are kept": {
			app: func() *argov1alpha1.Application {
				b := builders.Application("big")
				for i := range appsv1alpha1.MaxResources + 5 {
					b.Resource(resource("", "ConfigMap", "ns", fmt.Sprintf("cm-%04d", i), argov1alpha1.SyncStatusCodeSynced, healthOf(health.HealthStatusHealthy, "")))
				}
				b.Resource(resource("", "ConfigMap", "ns", "zz-broken", argov1alpha1.SyncStatusCodeOutOfSync, nil))
				return b.Build()
			}(),
			wantResources:     appsv1alpha1.MaxResources,
			wantTruncation:    &appsv1alpha1.Truncation{OmittedResources: 6},
			wantFirstResource: "cm-0000",
		},
		"more conditions than the report holds: errors are kept before warnings": {
			app: func() *argov1alpha1.Application {
				b := builders.Application("noisy")
				for i := range appsv1alpha1.MaxConditions + 3 {
					b.Condition(condition(argov1alpha1.ApplicationConditionOrphanedResourceWarning, fmt.Sprintf("orphan %d", i)))
				}
				b.Condition(condition(argov1alpha1.ApplicationConditionSyncError, "failed"))
				return b.Build()
			}(),
			wantConditions:    appsv1alpha1.MaxConditions,
			wantTruncation:    &appsv1alpha1.Truncation{OmittedConditions: 4},
			wantConditionType: "SyncError",
		},
		"more revisions than the report holds": {
			app: func() *argov1alpha1.Application {
				revs := make([]string, appsv1alpha1.MaxRevisions+2)
				for i := range revs {
					revs[i] = fmt.Sprintf("r%d", i)
				}
				return builders.Application("sources").Revisions(revs...).Build()
			}(),
			wantRevisions: appsv1alpha1.MaxRevisions,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := FromApplication(tt.app, nil)
			if len(got.Resources) != tt.wantResources || len(got.Conditions) != tt.wantConditions || len(got.Sync.Revisions) != tt.wantRevisions {
				t.Fatalf("got %d resources, %d conditions, %d revisions; want %d, %d, %d", len(got.Resources), len(got.Conditions),
					len(got.Sync.Revisions), tt.wantResources, tt.wantConditions, tt.wantRevisions)
			}
			if diff := cmp.Diff(tt.wantTruncation, got.Truncation); diff != "" {
				t.Errorf("Truncation mismatch (-want +got):\n%s", diff)
			}
			if tt.wantFirstResource != "" {
				if got.Resources[0].Name != tt.wantFirstResource {
					t.Errorf("first resource %q, want %q (sorted by identity)", got.Resources[0].Name, tt.wantFirstResource)
				}
				if !containsResource(got.Resources, "zz-broken") {
					t.Errorf("the out-of-sync resource was dropped; it must be kept first")
				}
			}
			if tt.wantConditionType != "" && got.Conditions[0].Type != tt.wantConditionType {
				t.Errorf("first condition %q, want %q", got.Conditions[0].Type, tt.wantConditionType)
			}
		})
	}
}

func containsResource(rs []appsv1alpha1.ResourceStatusReport, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}

func TestFromApplicationIsDeterministic(t *testing.T) {
	a := builders.Application("order").
		Resource(resource("", "Service", "ns", "b", argov1alpha1.SyncStatusCodeSynced, nil)).
		Resource(resource("apps", "Deployment", "ns", "a", argov1alpha1.SyncStatusCodeSynced, nil)).Build()
	b := a.DeepCopy()
	b.Status.Resources[0], b.Status.Resources[1] = b.Status.Resources[1], b.Status.Resources[0]
	if diff := cmp.Diff(FromApplication(a, nil), FromApplication(b, nil)); diff != "" {
		t.Errorf("the order Argo CD lists resources in changed the report:\n%s", diff)
	}
}

func TestShorten(t *testing.T) {
	tests := map[string]struct {
		in      string
		max     int
		want    string
		wantCut bool
	}{
		"short enough":               {in: "ok", max: 5, want: "ok"},
		"exactly the bound":          {in: "12345", max: 5, want: "12345"},
		"cut with an ellipsis":       {in: "123456", max: 5, want: "1234…", wantCut: true},
		"multi-byte within bound":    {in: "ééééé", max: 5, want: "ééééé"},
		"multi-byte cut on a rune":   {in: "éééééé", max: 5, want: "éééé…", wantCut: true},
		"room for the ellipsis only": {in: "123456", max: 1, want: "…", wantCut: true},
		"zero drops the text":        {in: "123456", max: 0, want: "", wantCut: true},
		"zero keeps an empty text":   {in: "", max: 0, want: ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, cut := Shorten(tt.in, tt.max)
			if got != tt.want || cut != tt.wantCut || utf8.RuneCountInString(got) > tt.max {
				t.Errorf("Shorten(%q, %d) = %q, %v; want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

func TestReportName(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := map[string]struct {
		namespace, name string
		want            string
	}{
		"namespace and name joined by a dot": {namespace: "argocd", name: "guestbook", want: "argocd.guestbook"},
		"too long: prefix and hash":          {namespace: "argocd", name: long, want: "argocd." + long[:229] + "-"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := ReportName(tt.namespace, tt.name)
			if len(got) > maxReportNameLength || !strings.HasPrefix(got, tt.want) {
				t.Errorf("ReportName(%q, %q) = %q (%d chars), want prefix %q", tt.namespace, tt.name, got, len(got), tt.want)
			}
		})
	}
	if ReportName("argocd", long+"x") == ReportName("argocd", long+"y") {
		t.Errorf("two long names that differ only at the end share a report name")
	}
}

// BenchmarkFromApplication1000Resources measures summarising an Application with 1,000
// resources, the size the report holds. It prints figures and asserts no time:
//
//	go test ./pkg/report/ -run '^$' -bench FromApplication -benchmem
func BenchmarkFromApplication1000Resources(b *testing.B) {
	bld := builders.Application("big").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Health(health.HealthStatusHealthy, "").
		OperationState(operation(synccommon.OperationSucceeded, "successfully synced", true)).
		Condition(condition(argov1alpha1.ApplicationConditionSharedResourceWarning, "shared"))
	for i := range 1000 {
		bld.Resource(resource("apps", "Deployment", fmt.Sprintf("ns-%d", i%17), fmt.Sprintf("app-%04d", (i*7919)%1000),
			argov1alpha1.SyncStatusCodeSynced, healthOf(health.HealthStatusHealthy, "")))
	}
	app := bld.Build()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = FromApplication(app, nil)
	}
}
