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
// A changed template changes the hub Applications' sources at once, but each cluster's
// Argo CD compares the change (and says OutOfSync) on its own time; a step whose cluster
// had not yet compared would show Healthy and let the next step sync first. The hub
// Application therefore shows OutOfSync from the moment its sources differ from those the
// cluster last compared (pullmodel.OutOfSyncUntilCompared), so every Application of the
// template goes back to Waiting together and the steps keep their order.
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
//
// The details are the report's and only the report's: when it goes (the addon disabled, the
// report deleted), its resources, conditions and messages go with it rather than stand
// beside feedback that may contradict them. What keeps an Application from running before
// the spoke says anything (the work not applied, no report) the controller says itself,
// in the same write, as the hub conditions it owns, with a Warning Event when one appears
// (delivery.go).
package appstatus

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appwrite"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "appstatus"

// EventSource is the source (reportingController) of the Events it records: the hub
// Application's status as the cluster reports it.
const EventSource = "argocd-pull-status"

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
	recorder  record.EventRecorder
	// reportGrace is how long an applied Application may go unreported (delivery.go).
	reportGrace time.Duration
	now         func() metav1.Time
	// written is the controller's own last write of each Application until the cache has
	// it: a change reaches the controller twice in quick succession (the work agent's
	// feedback, then the agent's report), and a second write built on a cache without the
	// first conflicts (docs/benchmarks.md, "What the figures decided").
	written appwrite.Writes
}

var _ reconcile.Reconciler = &reconciler{}

// Options configure the controller.
type Options struct {
	// ReportGracePeriod is how long after its ManifestWork was applied (or its cluster's
	// agent became available) an Application may go without a report from that agent
	// before it is marked NotReportedError. Zero means DefaultReportGracePeriod.
	ReportGracePeriod time.Duration
}

// Setup registers the controller with mgr. The shared pull-model indexes
// (pullmodel.SetupIndexes) must be registered on mgr first.
func Setup(mgr ctrl.Manager, o Options) error {
	r := &reconciler{
		client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorderFor(EventSource),
		reportGrace: cmp.Or(o.ReportGracePeriod, DefaultReportGracePeriod), now: metav1.Now,
	}
	readMetricsFrom(mgr.GetCache())
	return r.setupWithManager(mgr)
}

// Reconcile mirrors the feedback of the Application's ManifestWork and its agent's report
// into its status, with the hub conditions of what keeps it from running, writing only
// when something changed.
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
	// Every namespace: while the Application's target is invalid (propagation keeps its
	// last good ManifestWork), that work, wherever it is, still says what runs.
	works, err := pullmodel.WorksOf(ctx, r.client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Without a ManifestWork (not created yet, or replaced) there is nothing of the spoke
	// to show: the status keeps its scalars, and details and conditions of an earlier
	// delivery go.
	var (
		want    desired
		requeue time.Duration
	)
	cluster := pullmodel.TargetCluster(app)
	if mw := pullmodel.CurrentWork(app, works); mw != nil {
		cluster = mw.Namespace
		log = log.WithValues("manifestWork", klog.KObj(mw))
		ctx = ctrl.LoggerInto(ctx, log)
		if want, requeue, err = r.desiredFor(ctx, app, cluster, mw); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		log.V(4).Info("No ManifestWork for the Application", "cluster", cluster)
	}
	if requeue > 0 {
		log.V(4).Info("Applied, not reported yet; checking again when the grace period ends", "after", requeue)
	}
	return ctrl.Result{RequeueAfter: requeue}, r.mirror(ctx, app, want)
}

// desired is what the hub Application's status is made to show.
type desired struct {
	scalars pullmodel.Scalars
	source  pullmodel.ScalarSource
	// report is the agent's report; nil when there is none.
	report *appsv1alpha1.ApplicationReportStatus
	// hubConditions are the hub conditions this controller owns that apply now.
	hubConditions []argov1alpha1.ApplicationCondition
}

// desiredFor reads the sources of app's status, mw's feedback and conditions, the agent's
// report and the agent's addon, and combines them; with how long until the grace period
// of an unreported Application ends (0 when none is running).
func (r *reconciler) desiredFor(ctx context.Context, app *argov1alpha1.Application, cluster string, mw *workv1.ManifestWork) (desired, time.Duration, error) {
	log := ctrl.LoggerFrom(ctx)
	values, _ := pullmodel.ApplicationFeedback(mw)
	feedback, err := pullmodel.ScalarsFromFeedback(values)
	if err != nil {
		// Bad data from the spoke is not a reconcile error: retrying cannot fix it, and the
		// well-formed values are still mirrored.
		log.V(2).Info("Ignoring malformed ManifestWork feedback values", "reason", err.Error())
	}
	rep, err := r.reportFor(ctx, app, cluster)
	if err != nil {
		return desired{}, 0, err
	}
	agent, watched, err := r.agentOf(ctx, cluster)
	if err != nil {
		return desired{}, 0, err
	}
	var reported *appsv1alpha1.ApplicationReportStatus
	if rep != nil {
		reported = &rep.Status
	}
	d := desired{report: reported}
	d.scalars, d.source = pullmodel.MergeScalars(feedback, reported, agent.Available)
	d.scalars = pullmodel.OutOfSyncUntilCompared(d.scalars, reported, agent.Available, report.SpecSourcesDigest(&app.Spec))
	var requeue time.Duration
	d.hubConditions, requeue = deliveryConditions(delivery{
		cluster: cluster, work: mw, reported: rep != nil, agent: agent, watched: watched,
	}, r.reportGrace, r.now().Time)
	if stale, ok := staleCondition(cluster, agent, reported); ok {
		d.hubConditions = append(d.hubConditions, stale)
	}
	return d, requeue, nil
}

// agentOf reads the availability of cluster's agent and its ApplicationsWatched condition
// (nil when it has none) from its ManagedClusterAddOn.
func (r *reconciler) agentOf(ctx context.Context, cluster string) (pullmodel.AgentAvailability, *metav1.Condition, error) {
	mca, err := pullmodel.GetAgentAddOn(ctx, r.client, cluster)
	if err != nil || mca == nil {
		return pullmodel.AgentAvailabilityOf(nil), nil, err
	}
	return pullmodel.AgentAvailabilityOf(mca), meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionApplicationsWatched), nil
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

// mirror merges the scalars, the report's details and the hub conditions into the
// Application's status and writes it when something changed (appwrite.PatchApplication):
// the controller's only write. A hub condition the write adds is recorded as a Warning
// Event: the write succeeded on the very version that did not have it, so each
// appearance is recorded once.
func (r *reconciler) mirror(ctx context.Context, cached *argov1alpha1.Application, want desired) error {
	log := ctrl.LoggerFrom(ctx)
	now := r.now()
	before, written, err := appwrite.PatchApplication(ctx, r.client, r.apiReader, &r.written, cached, func(app *argov1alpha1.Application) bool {
		scalarsChanged := mirrorScalars(&app.Status, want.scalars, now)
		detailsChanged := mirrorReportDetails(&app.Status, want.report)
		var conditionsChanged bool
		app.Status.Conditions, conditionsChanged = pullmodel.SetHubConditions(app.Status.Conditions, pullmodel.AppStatusConditionTypes, want.hubConditions, now)
		return scalarsChanged || detailsChanged || conditionsChanged
	})
	if err != nil {
		return fmt.Errorf("writing the status of Application %s: %w", klog.KObj(cached), err)
	}
	if written == nil {
		log.V(4).Info("Application status already mirrors the spoke")
		return nil
	}
	log.V(2).Info("Mirrored the spoke's state into the Application status", "scalarsFrom", want.source,
		"health", written.Status.Health.Status, "sync", written.Status.Sync.Status,
		"revision", written.Status.Sync.Revision, "operationPhase", operationPhase(written),
		"resources", len(written.Status.Resources), "conditions", len(written.Status.Conditions))
	r.recordAppeared(written, before.Status.Conditions, want.hubConditions)
	return nil
}

// recordAppeared records a Warning Event on app for each hub condition of want that
// before did not have (same type and message).
func (r *reconciler) recordAppeared(app *argov1alpha1.Application, before, want []argov1alpha1.ApplicationCondition) {
	for _, c := range want {
		if slices.ContainsFunc(before, func(b argov1alpha1.ApplicationCondition) bool { return b.Type == c.Type && b.Message == c.Message }) {
			continue
		}
		r.recorder.Event(app, corev1.EventTypeWarning, c.Type, strings.TrimPrefix(c.Message, pullmodel.HubConditionPrefix))
	}
}

func operationPhase(app *argov1alpha1.Application) string {
	if app.Status.OperationState == nil {
		return ""
	}
	return string(app.Status.OperationState.Phase)
}
