package agent

import (
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
)

// requestApplier runs the hub's requests on the pulled Applications: the payload of a
// hub Application's ManifestWork carries its .operation and its refresh annotation as
// request annotations with an id (apps.AnnotationOperationRequest,
// apps.AnnotationRefreshRequest), never the fields themselves, because the work agent
// re-applies the payload whenever the ManifestWork changes. This controller sets each
// request on the spoke Application once: in one merge patch locked to the version it
// read, the field and the delivered annotation with the request's id. A request whose
// id the delivered annotation already holds is done, however often the work agent
// applies it again. The delivered ids go back to the hub in the ManifestWork's status
// feedback, and the hub then clears its request.
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
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, retryMaxDelay),
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
	if !pulledFromHub(app) {
		return ctrl.Result{}, nil
	}
	patch, delivered := requestPatch(app)
	for _, msg := range delivered.skipped {
		log.V(2).Info("Ignoring a hub request", "reason", msg)
	}
	if delivered.waiting != "" {
		log.V(4).Info("Operation request waits for the operation in progress", "request", delivered.waiting)
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
	log.V(2).Info("Set the hub's requests", "operation", delivered.operation, "refresh", delivered.refresh)
	return ctrl.Result{}, nil
}

// deliveries says what requestPatch did with an Application's requests: the ids it sets,
// the id of an operation request waiting for the operation in progress, and why it
// ignored a request it could not read.
type deliveries struct {
	operation, refresh, waiting string
	skipped                     []string
}

// requestPatch is the merge patch that sets app's undelivered requests, nil when there is
// nothing to set. It carries app's resourceVersion: applied to any other version it fails.
//
//   - An operation request whose id is not the delivered one is set as .operation, unless
//     an operation is in progress (.operation set): it waits, as Argo CD's own API refuses a
//     sync while one runs, for Argo CD to clear it.
//   - A refresh request whose id is not the delivered one sets the refresh annotation; a
//     pending "hard" one is not weakened to "normal".
func requestPatch(app *argov1alpha1.Application) (map[string]any, deliveries) {
	var d deliveries
	ann := app.GetAnnotations()
	annotations := map[string]any{}
	patch := map[string]any{}

	if v, ok := ann[apps.AnnotationOperationRequest]; ok {
		switch req, err := apps.ParseOperationRequest(v); {
		case err != nil:
			d.skipped = append(d.skipped, err.Error())
		case req.ID == ann[apps.AnnotationOperationDelivered]:
		case app.Operation != nil:
			d.waiting = req.ID
		default:
			patch["operation"] = req.Operation
			annotations[apps.AnnotationOperationDelivered] = req.ID
			d.operation = req.ID
		}
	}
	if v, ok := ann[apps.AnnotationRefreshRequest]; ok {
		switch req, err := apps.ParseRefreshRequest(v); {
		case err != nil:
			d.skipped = append(d.skipped, err.Error())
		case req.ID == ann[apps.AnnotationRefreshDelivered]:
		default:
			if ann[apps.AnnotationRefresh] != string(argov1alpha1.RefreshTypeHard) {
				annotations[apps.AnnotationRefresh] = req.Refresh
			}
			annotations[apps.AnnotationRefreshDelivered] = req.ID
			d.refresh = req.ID
		}
	}
	if len(annotations) == 0 {
		return nil, d
	}
	patch["metadata"] = map[string]any{"resourceVersion": app.GetResourceVersion(), "annotations": annotations}
	return patch, d
}
