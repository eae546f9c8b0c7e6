package appstatus

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

func TestStaleCondition(t *testing.T) {
	cutOff := metav1.NewTime(time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	observed := metav1.NewTime(time.Date(2026, 11, 28, 9, 29, 12, 0, time.UTC))
	unavailable := func(status metav1.ConditionStatus, reason string) pullmodel.AgentAvailability {
		mca := &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{{
			Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: status, Reason: reason, LastTransitionTime: cutOff,
		}}}}
		return pullmodel.AgentAvailabilityOf(mca)
	}
	report := &appsv1alpha1.ApplicationReportStatus{ObservedAt: observed}

	tests := map[string]struct {
		agent  pullmodel.AgentAvailability
		report *appsv1alpha1.ApplicationReportStatus
		want   bool
		wantIn []string
	}{
		"available agent: nothing stale":                                           {agent: unavailable(metav1.ConditionTrue, "ManagedClusterAddOnLeaseUpdated"), report: report},
		"no addon on the cluster: status comes from feedback, nothing to go stale": {agent: pullmodel.AgentAvailabilityOf(nil), report: report},
		"lease expired: when, why and the last report's time": {
			agent: unavailable(metav1.ConditionUnknown, "ManagedClusterAddOnLeaseUpdateStopped"), report: report, want: true,
			wantIn: []string{"cluster c2's", "since 2026-11-28T09:30:00Z", "Unknown (ManagedClusterAddOnLeaseUpdateStopped)", "last report, of 2026-11-28T09:29:12Z"},
		},
		"unavailable before the first report": {
			agent: unavailable(metav1.ConditionFalse, "ProbeUnavailable"), want: true,
			wantIn: []string{"False (ProbeUnavailable)", "no report of the Application"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, stale := staleCondition("c2", tc.agent, tc.report)
			if stale != tc.want {
				t.Fatalf("stale = %v, want %v (%+v)", stale, tc.want, got)
			}
			if !stale {
				return
			}
			if got.Type != pullmodel.ConditionStaleStatus || !pullmodel.IsHubCondition(got) {
				t.Errorf("condition %s %q is not the hub's StaleStatusWarning", got.Type, got.Message)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
		})
	}
}
