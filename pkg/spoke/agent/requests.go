package agent

import (
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
)

// requestApplier runs the hub's requests on the pulled Applications, the spoke's side of
// the run-once request protocol (pkg/contract/requests): the payload of a hub
// Application's ManifestWork carries its .operation and its refresh annotation as request
// annotations with an id, never the fields themselves, because the work agent re-applies
// the payload whenever the ManifestWork changes. This controller sets each request on the
// spoke Application once (requests.SpokePatch). The delivered ids go back to the hub in
// the ManifestWork's status feedback, and the hub then clears its request.
type requestApplier struct {
	apps   client.Reader
	writer client.Writer
}

func newRequestApplier(apps client.Reader, writer client.Writer) *requestApplier {
	return &requestApplier{apps: apps, writer: writer}
}

// start adds the controller to the running (or starting) manager, once Argo CD's
// Application CRD is there (the report controller starts at the same time).
func (r *requestApplier) start(mgr manager.Manager) error {
	c, err := controller.NewTypedUnmanaged[reconcile.Request]("hub-requests", controller.TypedOptions[reconcile.Request]{
		Reconciler:         r,
		RateLimiter:        retry.NewRateLimiter[reconcile.Request](),
		SkipNameValidation: ptr.To(true),
		Logger:             mgr.GetLogger().WithName("hub-requests"),
	})
	if err != nil {
		return fmt.Errorf("creating the hub requests controller: %w", err)
	}
	// Only Applications with a request: the event that brings an operation in waiting
	// forward is Argo CD clearing the previous one, an update of such an Application.
	hasRequest := predicate.NewTypedPredicateFuncs(func(obj client.Object) bool {
		a := obj.GetAnnotations()
		return a[apps.AnnotationOperationRequest] != "" || a[apps.AnnotationRefreshRequest] != ""
	})
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&argov1alpha1.Application{}),
		&handler.TypedEnqueueRequestForObject[client.Object]{}, hasRequest)); err != nil {
		return fmt.Errorf("watching Applications for hub requests: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the hub requests controller: %w", err)
	}
	return nil
}

// Reconcile sets the requests of the Application req that it does not hold yet.
func (r *requestApplier) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("application", req.NamespacedName)
	app := &argov1alpha1.Application{}
	if err := r.apps.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Application %s: %w", req, err)
	}
	if !pullmodel.DeliveredFromHub(app) {
		return ctrl.Result{}, nil
	}
	patch, delivered := requests.SpokePatch(app)
	for _, msg := range delivered.Skipped {
		log.V(2).Info("Ignoring a hub request", "reason", msg)
	}
	if delivered.Waiting != "" {
		log.V(4).Info("Operation request waits for the operation in progress", "request", delivered.Waiting)
	}
	if patch == nil {
		return ctrl.Result{}, nil
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A conflict (Argo CD wrote in between) is retried through the queue on the new
	// version, which may show an operation in progress by then.
	if err := r.writer.Patch(ctx, app, client.RawPatch(types.MergePatchType, data)); err != nil {
		return ctrl.Result{}, fmt.Errorf("setting the hub's requests on Application %s: %w", req, err)
	}
	log.V(2).Info("Set the hub's requests", "operation", delivered.Operation, "refresh", delivered.Refresh)
	return ctrl.Result{}, nil
}
