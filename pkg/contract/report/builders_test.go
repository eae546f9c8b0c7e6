package report

import (
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests build their Applications with test/builders:
// builders.Application("guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Build().
// What is below builds the parts of a status they vary, as Argo CD writes them, on the
// fixtures' clock.

// t0 is the fixtures' clock.
var t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// operation is an operation state started at t0 and, when finished, finished a minute later.
func operation(phase synccommon.OperationPhase, message string, finished bool) argov1alpha1.OperationState {
	op := argov1alpha1.OperationState{Phase: phase, Message: message, StartedAt: t0}
	if finished {
		f := metav1.NewTime(t0.Add(time.Minute))
		op.FinishedAt = &f
	}
	return op
}

// condition is a condition that last changed at t0.
func condition(conditionType, message string) argov1alpha1.ApplicationCondition {
	return argov1alpha1.ApplicationCondition{Type: conditionType, Message: message, LastTransitionTime: &t0}
}

// resource is a managed resource of version v1; a nil health means Argo CD kept none in
// the Application.
func resource(group, kind, namespace, name string, sync argov1alpha1.SyncStatusCode, h *argov1alpha1.HealthStatus) argov1alpha1.ResourceStatus {
	return argov1alpha1.ResourceStatus{Group: group, Version: "v1", Kind: kind, Namespace: namespace, Name: name, Status: sync, Health: h}
}

func healthOf(status health.HealthStatusCode, message string) *argov1alpha1.HealthStatus {
	return &argov1alpha1.HealthStatus{Status: status, Message: message}
}
