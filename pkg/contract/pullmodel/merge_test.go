package pullmodel

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestMergeScalars(t *testing.T) {
	fbAt := func(startedAt metav1.Time) Scalars {
		return Scalars{
			Health: ptr.To(health.HealthStatusProgressing), Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced), Revision: ptr.To("fb"),
			OperationPhase: ptr.To(synccommon.OperationRunning), OperationStartedAt: &startedAt,
		}
	}
	reported := builders.ReportStatus(later).State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "rep").
		Operation(appsv1alpha1.OperationSucceeded, started, later, "").Build()
	fromReport := Scalars{
		Health: ptr.To(health.HealthStatusHealthy), Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced), Revision: ptr.To("rep"),
		OperationPhase: ptr.To(synccommon.OperationSucceeded), OperationStartedAt: &started,
	}
	tests := map[string]struct {
		fb         Scalars
		report     *appsv1alpha1.ApplicationReportStatus
		available  bool
		want       Scalars
		wantSource ScalarSource
	}{
		"no report: feedback": {
			fb: fbAt(started), available: true, want: fbAt(started), wantSource: SourceFeedback,
		},
		"agent not available: feedback, however new the report": {
			fb: fbAt(started), report: reported, want: fbAt(started), wantSource: SourceFeedback,
		},
		"report observed after the feedback's operation started: report": {
			fb: fbAt(started), report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"report observed the same second the operation started: report (at least as new)": {
			fb: fbAt(later), report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"feedback shows an operation started after the report: feedback": {
			fb: fbAt(now), report: reported, available: true, want: fbAt(now), wantSource: SourceFeedback,
		},
		"feedback without an operation: report": {
			fb: Scalars{Health: ptr.To(health.HealthStatusDegraded)}, report: reported, available: true, want: fromReport, wantSource: SourceReport,
		},
		"report without values: the feedback fills them": {
			fb: fbAt(started), report: builders.ReportStatus(later).Build(), available: true, want: fbAt(started), wantSource: SourceReport,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, source := MergeScalars(tc.fb, tc.report, tc.available)
			if source != tc.wantSource {
				t.Errorf("source = %s, want %s", source, tc.wantSource)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scalars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutOfSyncUntilCompared(t *testing.T) {
	synced := Scalars{Health: ptr.To(health.HealthStatusHealthy), Sync: ptr.To(argov1alpha1.SyncStatusCodeSynced), Revision: ptr.To("rev")}
	outOfSync := Scalars{Health: ptr.To(health.HealthStatusHealthy), Sync: ptr.To(argov1alpha1.SyncStatusCodeOutOfSync), Revision: ptr.To("rev")}
	comparedOld := builders.ReportStatus(later).State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "rev").Build()
	comparedOld.Sync.ComparedSources = "old"
	noDigest := builders.ReportStatus(later).State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "rev").Build()
	tests := map[string]struct {
		report     *appsv1alpha1.ApplicationReportStatus
		available  bool
		hubSources string
		want       Scalars
	}{
		"the cluster compared the hub's sources: as merged": {
			report: comparedOld, available: true, hubSources: "old", want: synced,
		},
		"the hub's sources changed since the cluster compared: OutOfSync": {
			report: comparedOld, available: true, hubSources: "new", want: outOfSync,
		},
		"agent not available: its last report says nothing of now": {
			report: comparedOld, hubSources: "new", want: synced,
		},
		"no report: nothing known": {
			available: true, hubSources: "new", want: synced,
		},
		"a report without the digest (an older agent, never compared): as merged": {
			report: noDigest, available: true, hubSources: "new", want: synced,
		},
		"a hub Application without a source: as merged": {
			report: comparedOld, available: true, want: synced,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := OutOfSyncUntilCompared(synced, tc.report, tc.available, tc.hubSources)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scalars (-want +got):\n%s", diff)
			}
			if *synced.Sync != argov1alpha1.SyncStatusCodeSynced {
				t.Fatal("the input's sync status was changed through its pointer")
			}
		})
	}
}

func TestAgentAvailabilityOf(t *testing.T) {
	mca := func(conditions ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: started},
			Status:     addonv1alpha1.ManagedClusterAddOnStatus{Conditions: conditions},
		}
	}
	available := func(s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: s, Reason: "Lease", LastTransitionTime: later}
	}
	tests := map[string]struct {
		mca  *addonv1alpha1.ManagedClusterAddOn
		want AgentAvailability
	}{
		"no addon":               {want: AgentAvailability{Reason: "the argocd-pull addon is not enabled on the cluster"}},
		"no Available condition": {mca: mca(), want: AgentAvailability{Since: &started, Reason: "the agent has not reported available yet"}},
		"Available True":         {mca: mca(available(metav1.ConditionTrue)), want: AgentAvailability{Available: true, Since: &later}},
		"Available Unknown":      {mca: mca(available(metav1.ConditionUnknown)), want: AgentAvailability{Since: &later, Reason: "Available is Unknown (Lease)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AgentAvailabilityOf(tc.mca)); diff != "" {
				t.Errorf("availability (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReportSupersedes(t *testing.T) {
	report := func(name string, observed metav1.Time) *appsv1alpha1.ApplicationStatusReport {
		r := &appsv1alpha1.ApplicationStatusReport{Status: *builders.ReportStatus(observed).Build()}
		r.Name = name
		return r
	}
	tests := map[string]struct {
		candidate, current *appsv1alpha1.ApplicationStatusReport
		want               bool
	}{
		"newer wins":                    {candidate: report("b", later), current: report("a", started), want: true},
		"older loses":                   {candidate: report("a", started), current: report("b", later)},
		"same time: first name wins":    {candidate: report("a", started), current: report("b", started), want: true},
		"same time: later name loses":   {candidate: report("b", started), current: report("a", started)},
		"a report does not beat itself": {candidate: report("a", started), current: report("a", started)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ReportSupersedes(tc.candidate, tc.current); got != tc.want {
				t.Errorf("ReportSupersedes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTreeSupersedes(t *testing.T) {
	tree := func(name string, observed metav1.Time) *appsv1alpha1.ApplicationResourceTree {
		r := &appsv1alpha1.ApplicationResourceTree{Tree: appsv1alpha1.ResourceTreeData{ObservedAt: observed}}
		r.Name = name
		return r
	}
	tests := map[string]struct {
		candidate, current *appsv1alpha1.ApplicationResourceTree
		want               bool
	}{
		"newer wins":                  {candidate: tree("b", later), current: tree("a", started), want: true},
		"older loses":                 {candidate: tree("a", started), current: tree("b", later)},
		"same time: first name wins":  {candidate: tree("a", started), current: tree("b", started), want: true},
		"a tree does not beat itself": {candidate: tree("a", started), current: tree("a", started)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := TreeSupersedes(tc.candidate, tc.current); got != tc.want {
				t.Errorf("TreeSupersedes = %v, want %v", got, tc.want)
			}
		})
	}
}
