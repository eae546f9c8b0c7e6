package reports

import (
	"context"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// fieldOwner names the agent in the reports' managed fields.
const fieldOwner = "argocd-pull-agent"

// PublishReport writes the report of app, a pulled Application on cluster clusterName, to
// the hub through hub exactly as the agent does (same content, owned by owner as
// AddonOwnerReference makes it, field owner and server-side apply), with ObservedAt now,
// and returns the report written. It skips the agent's
// compare-before-write: callers such as the scale benchmark publish only changes.
// It reads no resource tree.
func PublishReport(ctx context.Context, hub client.Client, app *argov1alpha1.Application, clusterName string, owner metav1.OwnerReference, now time.Time) (*appsv1alpha1.ApplicationStatusReport, error) {
	desired := desiredReport(app, nil, clusterName, owner)
	if _, err := applyReport(ctx, hub, desired, now); err != nil {
		return nil, err
	}
	return desired, nil
}

// applyReport writes desired with server-side apply, ObservedAt set to now (to the
// second), and returns the resourceVersion the hub answered with.
func applyReport(ctx context.Context, hub client.Client, desired *appsv1alpha1.ApplicationStatusReport, now time.Time) (string, error) {
	desired.Status.ObservedAt.Time = now.Truncate(time.Second)
	return applyAsAgent(ctx, hub, desired)
}

// applyAsAgent writes desired, a report or a resource tree, with server-side apply as
// the agent's field owner, and returns the resourceVersion the hub answered with.
func applyAsAgent(ctx context.Context, hub client.Client, desired client.Object) (string, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return "", fmt.Errorf("converting %s: %w", desired.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: content}
	if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying %s %s/%s on the hub: %w", u.GetKind(), desired.GetNamespace(), desired.GetName(), err)
	}
	return u.GetResourceVersion(), nil
}
