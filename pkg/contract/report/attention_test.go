package report

import (
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
)

func TestAttentionRank(t *testing.T) {
	const (
		synced    = appsv1alpha1.SyncStatusSynced
		outOfSync = appsv1alpha1.SyncStatusOutOfSync
		syncUnk   = appsv1alpha1.SyncStatusUnknown
	)
	tests := map[string]struct {
		sync        appsv1alpha1.SyncStatusCode
		health      appsv1alpha1.HealthStatusCode
		want        int
		wantFailing bool
	}{
		"degraded wins over out of sync":       {sync: outOfSync, health: appsv1alpha1.HealthStatusDegraded, want: rankDegraded, wantFailing: true},
		"missing":                              {sync: synced, health: appsv1alpha1.HealthStatusMissing, want: rankMissing, wantFailing: true},
		"out of sync, healthy":                 {sync: outOfSync, health: appsv1alpha1.HealthStatusHealthy, want: rankOutOfSync, wantFailing: true},
		"unknown health wins over out of sync": {sync: outOfSync, health: appsv1alpha1.HealthStatusUnknown, want: rankHealthUnknown, wantFailing: true},
		"unknown sync":                         {sync: syncUnk, want: rankSyncUnknown, wantFailing: true},
		"progressing is on its way":            {sync: synced, health: appsv1alpha1.HealthStatusProgressing, want: rankOnItsWay},
		"suspended is on its way":              {sync: synced, health: appsv1alpha1.HealthStatusSuspended, want: rankOnItsWay},
		"not compared yet is on its way":       {health: appsv1alpha1.HealthStatusHealthy, want: rankOnItsWay},
		"synced and healthy is fine":           {sync: synced, health: appsv1alpha1.HealthStatusHealthy, want: rankFine},
		"synced without health is fine":        {sync: synced, want: rankFine},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := AttentionRank(tc.sync, tc.health); got != tc.want {
				t.Errorf("AttentionRank = %d, want %d", got, tc.want)
			}
			if got := Failing(tc.sync, tc.health); got != tc.wantFailing {
				t.Errorf("Failing = %v, want %v", got, tc.wantFailing)
			}
		})
	}
}

func TestFailingResourcesMostSevereFirst(t *testing.T) {
	res := func(name string, sync appsv1alpha1.SyncStatusCode, health appsv1alpha1.HealthStatusCode) appsv1alpha1.ResourceStatusReport {
		r := appsv1alpha1.ResourceStatusReport{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: name, Status: sync}
		if health != "" {
			r.Health = &appsv1alpha1.ResourceHealthReport{Status: health, Message: name + " says"}
		}
		return r
	}
	in := []appsv1alpha1.ResourceStatusReport{
		res("fine", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusHealthy),
		res("drifted", appsv1alpha1.SyncStatusOutOfSync, ""),
		res("rolling", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusProgressing),
		res("broken", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusDegraded),
	}
	got := FailingResources(in)
	want := []appsv1alpha1.FailingResource{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "broken", SyncStatus: "Synced", HealthStatus: "Degraded", Message: "broken says"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "drifted", SyncStatus: "OutOfSync"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FailingResources (-want +got):\n%s", diff)
	}
	if FailingResources(in[:1]) != nil {
		t.Error("FailingResources of fine resources is not nil")
	}
}

func TestConditionRankAndSort(t *testing.T) {
	conditions := []appsv1alpha1.Condition{
		{Type: "SharedResourceWarning"},
		{Type: "ComparisonError"},
		{Type: "OrphanedResourceWarning"},
		{Type: appsv1alpha1.ConditionManifestWorkNotApplied},
		{Type: appsv1alpha1.ConditionOperationFailed},
	}
	SortConditions(conditions)
	var got []string
	for _, c := range conditions {
		got = append(got, c.Type)
	}
	want := []string{"ComparisonError", appsv1alpha1.ConditionManifestWorkNotApplied, appsv1alpha1.ConditionOperationFailed, "SharedResourceWarning", "OrphanedResourceWarning"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted types (-want +got):\n%s", diff)
	}
}

func TestFailedOperation(t *testing.T) {
	if _, ok := FailedOperation(appsv1alpha1.OperationSucceeded, "done"); ok {
		t.Error("a succeeded operation gave a condition")
	}
	if _, ok := FailedOperation(appsv1alpha1.OperationFailed, ""); ok {
		t.Error("a failed operation without a message gave a condition")
	}
	c, ok := FailedOperation(appsv1alpha1.OperationError, "one or more objects failed to apply")
	if !ok || c.Type != appsv1alpha1.ConditionOperationFailed || c.Message != "one or more objects failed to apply" {
		t.Errorf("FailedOperation = %+v, %v", c, ok)
	}
}

// TestConversionRoundTrip: what FromApplication reports, ToArgoResources and
// ToArgoConditions give back in Argo CD's form unchanged, for values within the bounds
// (resources in the report's order: group, kind, namespace, name).
func TestConversionRoundTrip(t *testing.T) {
	app := builders.Application("guestbook").
		Resource(resource("", "Service", "guestbook", "guestbook-ui", argov1alpha1.SyncStatusCodeSynced, nil)).
		Resource(resource("apps", "Deployment", "guestbook", "guestbook-ui", argov1alpha1.SyncStatusCodeOutOfSync, healthOf("Degraded", "0/1 ready"))).
		Condition(condition("SyncError", "failed to sync")).
		Build()
	st := FromApplication(app, nil)
	gotResources := ToArgoResources(st.Resources)
	if diff := cmp.Diff(app.Status.Resources, gotResources); diff != "" {
		t.Errorf("resources after a round trip (-want +got):\n%s", diff)
	}
	gotConditions := ToArgoConditions(st.Conditions)
	if diff := cmp.Diff(app.Status.Conditions, gotConditions); diff != "" {
		t.Errorf("conditions after a round trip (-want +got):\n%s", diff)
	}
	if ToArgoResources(nil) != nil || ToArgoConditions(nil) != nil {
		t.Error("nothing reported should convert to nil")
	}
}
