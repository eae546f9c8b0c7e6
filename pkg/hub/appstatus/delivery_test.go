package appstatus

import (
	"strings"
	"testing"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestDeliveryConditions(t *testing.T) {
	const grace = time.Minute
	// The work agent's own messages (ocm v1.2 manifestwork_reconciler.go, objectreader).
	const (
		missingNamespace = `Failed to apply manifest: namespaces "openshift-gitops" not found`
		workNotApplied   = "Failed to apply manifest work"
	)
	delivered := func() *work {
		return newWork("guestbook-7c0e3", "c1", "guestbook").delivers("openshift-gitops", "guestbook").feedback()
	}
	applied := func(at metav1.Time) *workv1.ManifestWork {
		return delivered().condition(workv1.WorkApplied, metav1.ConditionTrue, "Apply manifest work complete", at).
			manifestCondition(workv1.ManifestApplied, metav1.ConditionTrue, "Apply manifest complete").obj()
	}
	longAgo := metav1.NewTime(now.Add(-time.Hour))
	justNow := metav1.NewTime(now.Add(-10 * time.Second))
	available := pullmodel.AgentAvailability{Available: true, Since: &longAgo}
	watching := &metav1.Condition{Type: apps.ConditionApplicationsWatched, Status: metav1.ConditionTrue,
		Message: "Watching Argo CD Applications in namespaces argocd, team-a"}

	tests := map[string]struct {
		in          delivery
		wantType    argov1alpha1.ApplicationConditionType
		wantIn      []string
		wantNotIn   []string
		wantRecheck time.Duration
	}{
		"no ManifestWork": {in: delivery{cluster: "c1", agent: available}},
		"not applied: the manifest's message names the cause": {
			in: delivery{cluster: "c1", agent: available, work: delivered().
				condition(workv1.WorkApplied, metav1.ConditionFalse, workNotApplied, longAgo).
				manifestCondition(workv1.ManifestApplied, metav1.ConditionFalse, missingNamespace).obj()},
			wantType:  pullmodel.ConditionClusterApplyError,
			wantIn:    []string{"c1/guestbook-7c0e3", "cluster c1", missingNamespace},
			wantNotIn: []string{workNotApplied},
		},
		"not applied, no manifest condition: the work's message": {
			in: delivery{cluster: "c1", agent: available, work: delivered().
				condition(workv1.WorkApplied, metav1.ConditionFalse, workNotApplied, longAgo).obj()},
			wantType: pullmodel.ConditionClusterApplyError,
			wantIn:   []string{"not applied on cluster c1", workNotApplied},
		},
		"applied but the Application is not there": {
			in: delivery{cluster: "c1", agent: available, reported: true, work: delivered().
				condition(workv1.WorkApplied, metav1.ConditionTrue, "Apply manifest work complete", longAgo).
				condition(workv1.WorkAvailable, metav1.ConditionFalse, "1 of 1 resources are not available", longAgo).
				manifestCondition(workv1.ManifestAvailable, metav1.ConditionFalse, "Resource is not available").obj()},
			wantType: pullmodel.ConditionClusterApplyError,
			wantIn:   []string{"openshift-gitops/guestbook is not available on cluster c1", "Resource is not available"},
		},
		"not applied although reported: still an apply error": {
			in: delivery{cluster: "c1", agent: available, reported: true, work: delivered().
				condition(workv1.WorkApplied, metav1.ConditionFalse, workNotApplied, longAgo).
				manifestCondition(workv1.ManifestApplied, metav1.ConditionFalse, "admission webhook denied the request").obj()},
			wantType: pullmodel.ConditionClusterApplyError,
			wantIn:   []string{"admission webhook denied the request"},
		},
		"not applied yet: the work agent has not said anything": {
			in: delivery{cluster: "c1", agent: available, work: delivered().obj()},
		},
		"applied and reported": {
			in: delivery{cluster: "c1", agent: available, reported: true, watched: watching, work: applied(longAgo)},
		},
		"applied, not reported, past the grace period: where it went and what the agent watches": {
			in:       delivery{cluster: "c1", agent: available, watched: watching, work: applied(longAgo)},
			wantType: pullmodel.ConditionNotReported,
			wantIn: []string{"cluster c1 as openshift-gitops/guestbook", "c1/guestbook-7c0e3", "1m0s", watching.Message,
				"Add namespace openshift-gitops", apps.AnnotationOCMManagedClusterAppNamespace},
		},
		"applied, not reported, the agent says nothing about what it watches": {
			in:       delivery{cluster: "c1", agent: available, work: applied(longAgo)},
			wantType: pullmodel.ConditionNotReported,
			wantIn:   []string{"has no " + apps.ConditionApplicationsWatched + " condition"},
		},
		"applied just now: within the grace period, checked again when it ends": {
			in:          delivery{cluster: "c1", agent: available, watched: watching, work: applied(justNow)},
			wantRecheck: 50 * time.Second,
		},
		"the agent became available just now: the period counts from then": {
			in:          delivery{cluster: "c1", agent: pullmodel.AgentAvailability{Available: true, Since: &justNow}, work: applied(longAgo)},
			wantRecheck: 50 * time.Second,
		},
		"applied, the agent not available: the report cannot come, nothing to wait for": {
			in: delivery{cluster: "c1", agent: pullmodel.AgentAvailabilityOf(nil), work: applied(longAgo)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, recheck := deliveryConditions(tc.in, grace, now.Time)
			if recheck != tc.wantRecheck {
				t.Errorf("recheck after %v, want %v", recheck, tc.wantRecheck)
			}
			if tc.wantType == "" {
				if len(got) != 0 {
					t.Fatalf("conditions %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Type != tc.wantType || !pullmodel.IsHubCondition(got[0]) {
				t.Fatalf("conditions %+v, want one hub condition of type %s", got, tc.wantType)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(got[0].Message, s) {
					t.Errorf("message %q does not contain %q", got[0].Message, s)
				}
			}
			for _, s := range tc.wantNotIn {
				if strings.Contains(got[0].Message, s) {
					t.Errorf("message %q contains %q", got[0].Message, s)
				}
			}
		})
	}
}
