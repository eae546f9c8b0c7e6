package report

import (
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// t0 is the fixtures' clock.
var t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// applicationBuilder builds the Applications of the tests:
// newApplication("guestbook").synced("abc").healthy().obj().
type applicationBuilder struct{ app argov1alpha1.Application }

func newApplication(name string) *applicationBuilder {
	b := &applicationBuilder{}
	b.app.Name, b.app.Namespace = name, "argocd"
	return b
}

func (b *applicationBuilder) sync(status argov1alpha1.SyncStatusCode, revision string) *applicationBuilder {
	b.app.Status.Sync = argov1alpha1.SyncStatus{Status: status, Revision: revision}
	return b
}

func (b *applicationBuilder) revisions(revs ...string) *applicationBuilder {
	b.app.Status.Sync.Revisions = revs
	return b
}

func (b *applicationBuilder) health(status health.HealthStatusCode, message string) *applicationBuilder {
	b.app.Status.Health = argov1alpha1.HealthStatus{Status: status, Message: message}
	return b
}

func (b *applicationBuilder) operation(phase synccommon.OperationPhase, message string, finished bool) *applicationBuilder {
	op := &argov1alpha1.OperationState{Phase: phase, Message: message, StartedAt: t0}
	if finished {
		f := metav1.NewTime(t0.Add(time.Minute))
		op.FinishedAt = &f
	}
	b.app.Status.OperationState = op
	return b
}

func (b *applicationBuilder) condition(typ, message string) *applicationBuilder {
	b.app.Status.Conditions = append(b.app.Status.Conditions, argov1alpha1.ApplicationCondition{
		Type: typ, Message: message, LastTransitionTime: &t0,
	})
	return b
}

// resource adds a resource; a nil health means Argo CD kept none in the Application.
func (b *applicationBuilder) resource(group, kind, namespace, name string, sync argov1alpha1.SyncStatusCode, h *argov1alpha1.HealthStatus) *applicationBuilder {
	b.app.Status.Resources = append(b.app.Status.Resources, argov1alpha1.ResourceStatus{
		Group: group, Version: "v1", Kind: kind, Namespace: namespace, Name: name, Status: sync, Health: h,
	})
	return b
}

func (b *applicationBuilder) healthInAppTree() *applicationBuilder {
	b.app.Status.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
	return b
}

func (b *applicationBuilder) obj() *argov1alpha1.Application { return b.app.DeepCopy() }

func healthOf(status health.HealthStatusCode, message string) *argov1alpha1.HealthStatus {
	return &argov1alpha1.HealthStatus{Status: status, Message: message}
}
