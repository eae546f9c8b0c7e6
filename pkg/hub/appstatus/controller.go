// Package appstatus mirrors the status the spoke reports for a pulled Argo CD Application
// back onto the hub Application: the OCM work agent copies health, sync, sync revision and
// the operation's phase and start time of the spoke Application into the status feedback of
// its ManifestWork, and this controller writes them into the hub Application's .status.
//
// # Why the hub needs this: ApplicationSet progressive sync
//
// The hub's Argo CD skips pulled Applications (argocd.argoproj.io/skip-reconcile), so nothing
// else fills in their status. The ApplicationSet controller's RollingSync strategy
// (argo-cd v2.14 applicationset/controllers/applicationset_controller.go) reads exactly these
// hub status fields to move each Application through its rollout states:
//
//   - Waiting → Pending (updateApplicationSetApplicationStatusProgress): the step and maxUpdate
//     allow it. The ApplicationSet controller then sets .operation on the hub Application if
//     status.sync.status is OutOfSync; propagation delivers it to the spoke, which syncs.
//   - Pending → Progressing (updateApplicationSetApplicationStatus): status.operationState.phase
//     is Running, or is Succeeded while status.sync.status is not OutOfSync, or
//     status.health.status is Progressing.
//   - Progressing → Healthy (same function, same pass): isApplicationHealthy, i.e. health
//     Healthy, sync not OutOfSync and the operation phase Succeeded or absent.
//   - Waiting → Healthy when already healthy; any state → Waiting when status.sync.revision
//     (GetRevisions) or, under RollingSync, the OutOfSync sync status says there is new work.
//
// The ApplicationSet controller only re-reconciles on a hub Application update when
// health.status or sync.status changed, or when operationState.phase or .startedAt changed
// (shouldRequeueForApplication). A spoke sync that goes from Succeeded to Succeeded again is
// therefore only visible through the new startedAt, and a quick sync whose Running phase the
// work agent never observed still arrives as phase Succeeded with a new startedAt, which takes
// Pending to Progressing and, once health is Healthy, on to Healthy in the same pass.
//
// The argocd-pull agent's ApplicationStatusReport adds what feedback cannot carry: the
// resources with their sync and health, the conditions with the errors, and the health and
// operation messages, so the hub's Argo CD UI and CLI show the spoke's real state. The same
// reconcile combines both sources (pullmodel.MergeScalars states the precedence rule), so they never
// fight: the result is a function of the inputs and is written only when it differs.
//
// So the controller mirrors the five values verbatim, in a single write per change: it never
// invents an intermediate Progressing (two writes per reconcile would race the ApplicationSet
// controller's cache and leave it stuck at Progressing when it saw only the first), and when the
// spoke reports Healthy the hub reports Healthy.
package appstatus

import (
	"context"
	"fmt"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "appstatus"

// maxConcurrentReconciles: one worker fell far behind a churn of status changes in the
// scale benchmark (docs/benchmarks.md); each reconcile mostly waits for one write.
const maxConcurrentReconciles = 10

// reconciler mirrors the spoke's state of a pulled Application into the hub Application's
// status. It reconciles hub Applications; ManifestWorks, agent reports and agent
// availability reach it through the mappings in watches.go.
type reconciler struct {
	// client reads from the manager's cache and writes to the API server.
	client client.Client
	// apiReader reads from the API server directly, to re-read after a conflict.
	apiReader client.Reader
	now       func() metav1.Time
}

var _ reconcile.Reconciler = &reconciler{}

// Setup registers the controller with mgr. The shared pull-model indexes
// (pullmodel.SetupIndexes) must be registered on mgr first.
func Setup(mgr ctrl.Manager) error {
	r := &reconciler{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), now: metav1.Now}
	return r.setupWithManager(mgr)
}

// Reconcile mirrors the feedback of the Application's ManifestWork and its agent's report
// into its status, writing only when a mirrored field changed.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	app := &argov1alpha1.Application{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting Application %s: %w", req, err)
	}
	if !app.DeletionTimestamp.IsZero() || !pullmodel.IsMarked(app) {
		return ctrl.Result{}, nil
	}
	cluster := pullmodel.TargetCluster(app)
	if cluster == "" {
		log.V(4).Info("Application has no target cluster; nothing to mirror")
		return ctrl.Result{}, nil
	}

	works, err := pullmodel.WorksOf(ctx, r.client, req.NamespacedName, client.InNamespace(cluster))
	if err != nil {
		return ctrl.Result{}, err
	}
	mw := pullmodel.CurrentWork(app, works)
	if mw == nil {
		log.V(4).Info("No ManifestWork for the Application yet", "cluster", cluster)
		return ctrl.Result{}, nil
	}
	log = log.WithValues("manifestWork", klog.KObj(mw))
	ctx = ctrl.LoggerInto(ctx, log)
	values, _ := pullmodel.ApplicationFeedback(mw)
	feedback, err := pullmodel.ScalarsFromFeedback(values)
	if err != nil {
		// Bad data from the spoke is not a reconcile error: retrying cannot fix it, and the
		// well-formed values are still mirrored.
		log.V(2).Info("Ignoring malformed ManifestWork feedback values", "reason", err.Error())
	}
	report, err := r.reportFor(ctx, app, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if feedback.IsEmpty() && report == nil {
		log.V(4).Info("Neither ManifestWork feedback nor an agent report for the Application yet")
		return ctrl.Result{}, nil
	}
	agent, err := pullmodel.GetAgentAvailability(ctx, r.client, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	var reported *appsv1alpha1.ApplicationReportStatus
	if report != nil {
		reported = &report.Status
	}
	scalars, source := pullmodel.MergeScalars(feedback, reported, agent.Available)
	return ctrl.Result{}, r.mirror(ctx, app, scalars, source, reported)
}

// reportFor returns the agent's report of app in the cluster namespace, nil when there is
// none; of several, the one pullmodel.ReportSupersedes picks.
func (r *reconciler) reportFor(ctx context.Context, app *argov1alpha1.Application, cluster string) (*appsv1alpha1.ApplicationStatusReport, error) {
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := r.client.List(ctx, reports, client.InNamespace(cluster),
		client.MatchingFields{reportHubApplicationIndex: client.ObjectKeyFromObject(app).String()}); err != nil {
		return nil, fmt.Errorf("listing ApplicationStatusReports of Application %s in namespace %s: %w", klog.KObj(app), cluster, err)
	}
	var newest *appsv1alpha1.ApplicationStatusReport
	for i := range reports.Items {
		rep := &reports.Items[i]
		if !rep.DeletionTimestamp.IsZero() {
			continue
		}
		if newest == nil || pullmodel.ReportSupersedes(rep, newest) {
			newest = rep
		}
	}
	return newest, nil
}

// mirror merges the scalars and the report's details into the Application's status and
// writes it when something changed: the controller's only write. The Application CRD has
// no status subresource, so the write is a merge patch of the whole object carrying the
// read resourceVersion (optimistic lock). Unlike an Update of the typed object, the patch
// holds only the changed status fields, so fields of a newer Application CRD that this
// version's types do not know are never dropped. On a conflict the Application is read
// again from the API server and the status recomputed; never retried on the stale object.
func (r *reconciler) mirror(ctx context.Context, cached *argov1alpha1.Application, scalars pullmodel.Scalars, source pullmodel.ScalarSource, report *appsv1alpha1.ApplicationReportStatus) error {
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(cached)
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := cached
		if attempt > 0 {
			app = &argov1alpha1.Application{}
			if err := r.apiReader.Get(ctx, key, app); err != nil {
				return err
			}
		}
		attempt++
		updated := app.DeepCopy()
		scalarsChanged := mirrorScalars(&updated.Status, scalars, r.now())
		detailsChanged := mirrorReportDetails(&updated.Status, report)
		if !scalarsChanged && !detailsChanged {
			log.V(4).Info("Application status already mirrors the spoke")
			return nil
		}
		if err := r.client.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		log.V(2).Info("Mirrored the spoke's state into the Application status", "scalarsFrom", source,
			"health", updated.Status.Health.Status, "sync", updated.Status.Sync.Status,
			"revision", updated.Status.Sync.Revision, "operationPhase", operationPhase(updated),
			"resources", len(updated.Status.Resources), "conditions", len(updated.Status.Conditions))
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of Application %s: %w", key, err)
	}
	return nil
}

func operationPhase(app *argov1alpha1.Application) string {
	if app.Status.OperationState == nil {
		return ""
	}
	return string(app.Status.OperationState.Phase)
}
