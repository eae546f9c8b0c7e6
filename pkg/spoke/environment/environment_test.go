package environment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

func TestApplicationsWatchedCondition(t *testing.T) {
	watched := []string{"argocd", "team-a"}
	tests := map[string]struct {
		installed   bool
		missing     []string
		watched     []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		// The hub quotes this message when a delivered Application is never reported.
		"all there": {installed: true, watched: watched, wantStatus: metav1.ConditionTrue, wantReason: apps.ReasonApplicationsWatched,
			wantMessage: "Watching Argo CD Applications in namespaces argocd, team-a."},
		"all there, one namespace watched": {installed: true, watched: []string{"argocd"}, wantStatus: metav1.ConditionTrue,
			wantReason: apps.ReasonApplicationsWatched, wantMessage: "Watching Argo CD Applications in namespace argocd."},
		"Argo CD missing": {watched: watched, wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonArgoCDNotInstalled,
			wantMessage: "Argo CD is not installed on the cluster: CRD applications.argoproj.io not found or not established. " +
				"Applications are reported as soon as it is installed."},
		"Argo CD missing comes first": {missing: []string{"team-a"}, watched: watched, wantStatus: metav1.ConditionFalse,
			wantReason: apps.ReasonArgoCDNotInstalled,
			wantMessage: "Argo CD is not installed on the cluster: CRD applications.argoproj.io not found or not established. " +
				"Applications are reported as soon as it is installed."},
		"namespaces missing": {installed: true, missing: []string{"team-a", "team-b"}, watched: []string{"argocd", "team-a", "team-b"},
			wantStatus: metav1.ConditionFalse, wantReason: apps.ReasonWatchedNamespaceMissing,
			wantMessage: "Watched namespaces not found on the cluster: team-a, team-b. Their Applications are reported as soon as they exist."},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := applicationsWatchedCondition(tt.installed, tt.missing, tt.watched)
			want := metav1.Condition{Type: apps.ConditionApplicationsWatched, Status: tt.wantStatus, Reason: tt.wantReason, Message: tt.wantMessage}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("condition mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
