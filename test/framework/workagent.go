package framework

import (
	"context"
	"encoding/json"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// WriteWorkAgentStatus writes the status of ManifestWork work as OCM's work agent does for
// a delivered Application whose spoke copy is app: the status feedback of the pull
// model's rules, the manifest's and the work's conditions (observing generation, last
// transition at since), as a JSON merge patch of the status subresource. The benchmarks
// stand in for the work agents of a fleet with it.
func WriteWorkAgentStatus(ctx context.Context, c client.Client, work types.NamespacedName, generation int64,
	app *argov1alpha1.Application, since time.Time) error {
	st := &app.Status
	phase, startedAt := "", ""
	if op := st.OperationState; op != nil {
		phase, startedAt = string(op.Phase), op.StartedAt.UTC().Format(time.RFC3339)
	}
	values := []workv1.FeedbackValue{}
	for _, v := range []struct{ name, value string }{
		{pullmodel.FeedbackHealthStatus, string(st.Health.Status)},
		{pullmodel.FeedbackSyncStatus, string(st.Sync.Status)},
		{pullmodel.FeedbackOperationStatePhase, phase},
		{pullmodel.FeedbackOperationStateStartedAt, startedAt},
		{pullmodel.FeedbackSyncRevision, st.Sync.Revision},
	} {
		values = append(values, workv1.FeedbackValue{Name: v.name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v.value)}})
	}
	t := metav1.NewTime(since.Truncate(time.Second))
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: generation, LastTransitionTime: t}
	}
	status := workv1.ManifestWorkStatus{
		Conditions: []metav1.Condition{cond(workv1.WorkApplied, "AppliedManifestWorkComplete", "Apply manifest work complete"),
			cond(workv1.WorkAvailable, "ResourcesAvailable", "All resources are available")},
		ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 0, Group: "argoproj.io", Version: "v1alpha1", Kind: "Application",
				Resource: "applications", Name: app.Name, Namespace: app.Namespace},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
			Conditions: []metav1.Condition{cond(workv1.ManifestApplied, "AppliedManifestComplete", "Apply manifest complete"),
				cond(workv1.ManifestAvailable, "ResourceAvailable", "Resource is available"),
				cond("StatusFeedbackSynced", "StatusFeedbackSynced", "")},
		}}},
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	mw := &workv1.ManifestWork{}
	mw.Namespace, mw.Name = work.Namespace, work.Name
	return c.Status().Patch(ctx, mw, client.RawPatch(types.MergePatchType, patch))
}

// SyncedGuestbookStatus is the status Argo CD gives the guestbook example (a Service and a
// Deployment) after syncing revision at at: health h, the Deployment's while it rolls out
// (Progressing) or done (Healthy). The benchmarks' simulated spokes report it.
func SyncedGuestbookStatus(revision string, h health.HealthStatusCode, at time.Time) argov1alpha1.ApplicationStatus {
	started, finished := metav1.NewTime(at.Add(-2*time.Second).Truncate(time.Second)), metav1.NewTime(at.Truncate(time.Second))
	return argov1alpha1.ApplicationStatus{
		Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: revision},
		Health: argov1alpha1.HealthStatus{Status: h},
		OperationState: &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: revision}},
			Phase:     synccommon.OperationSucceeded, Message: "successfully synced (all tasks run)",
			SyncResult: &argov1alpha1.SyncOperationResult{Revision: revision},
			StartedAt:  started, FinishedAt: &finished,
		},
		Resources: []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1alpha1.SyncStatusCodeSynced,
				Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1alpha1.SyncStatusCodeSynced,
				Health: &argov1alpha1.HealthStatus{Status: h}},
		},
		ReconciledAt: &finished,
	}
}
