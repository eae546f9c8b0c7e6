// Package environment is the agent's environment controller: it waits for Argo CD and
// the watched namespaces on the managed cluster, starts reporting once Argo CD is there,
// and writes the agent's ManagedClusterAddOn conditions.
package environment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/phrase"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/retry"
)

// ApplicationCRDName is the CRD whose presence means Argo CD is installed.
const ApplicationCRDName = "applications.argoproj.io"

// recheckAfter is the safety net while Argo CD or a watched namespace is missing: the
// watches on the CRD and the namespaces bring the fix in at once; this only covers a
// missed event. It is jittered so a fleet of agents does not recheck in step.
const recheckAfter = 5 * time.Minute

// environmentRequest is the one request of the environment controller: everything it
// looks at is summed up in the ManagedClusterAddOn's conditions, written together.
var environmentRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "environment"}}

// ConditionSource is a ManagedClusterAddOn condition another part of the agent keeps.
type ConditionSource interface {
	// Condition is the condition as it stands; nil while there is nothing to say.
	Condition() *metav1.Condition
	// Changed gets an event when the condition changes.
	Changed() <-chan event.GenericEvent
}

// Reconciler watches for Argo CD's Application CRD and the watched
// namespaces, starts the report controller once the CRD is established, and tells the
// user on the agent's ManagedClusterAddOn what is missing and whether Argo CD keeps
// per-resource health where reports can carry it. It is the one writer of the agent's
// ManagedClusterAddOn conditions.
type Reconciler struct {
	// Managed reads the managed cluster.
	Managed client.Reader
	// HubReader reads the hub uncached; HubWriter writes the ManagedClusterAddOn's status.
	HubReader client.Reader
	HubWriter client.Client
	// ClusterName is the managed cluster's name, the namespace of its ManagedClusterAddOn.
	ClusterName string
	// Namespaces are the watched namespaces.
	Namespaces []string
	// StartReports starts the report controllers; called on every reconcile that finds
	// Argo CD installed, it must start them once.
	StartReports func() error
	// Conditions are the further conditions written with the controller's own, in this
	// order: each is absent until its source has something to say, and the last one
	// written stays meanwhile. A change of one is an event.
	Conditions []ConditionSource
}

// SetupWithManager adds the controller to mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toEnvironment := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{environmentRequest}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("agent-environment").
		WithOptions(controller.Options{
			SkipNameValidation: ptr.To(true),
			// A hub outage delays the condition by minutes at most, not by the default's 16.
			RateLimiter: retry.NewRateLimiter[reconcile.Request](),
		}).
		// One request at start-up: when neither the CRD nor a watched namespace exists,
		// no watch event would ever say so.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(environmentRequest)
			return nil
		})).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, toEnvironment).
		Watches(&corev1.Namespace{}, toEnvironment)
	for _, c := range r.Conditions {
		b = b.WatchesRawSource(source.Channel(c.Changed(), toEnvironment))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("creating the environment controller: %w", err)
	}
	return nil
}

// Reconcile starts reporting when Argo CD is there and keeps the conditions current.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	installed, err := r.argoCDInstalled(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	missing, err := r.missingNamespaces(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if installed {
		if err := r.StartReports(); err != nil {
			return ctrl.Result{}, err
		}
	}
	cond := applicationsWatchedCondition(installed, missing, r.Namespaces)
	conds := []metav1.Condition{cond}
	// Absent until its source told (a reconciled Application, a tree read): the last one
	// written stays meanwhile (after a restart, or once every Application is gone).
	for _, c := range r.Conditions {
		if other := c.Condition(); other != nil {
			conds = append(conds, *other)
		}
	}
	if err := r.setConditions(ctx, conds...); err != nil {
		return ctrl.Result{}, err
	}
	if cond.Status != metav1.ConditionTrue {
		log.V(4).Info("Waiting for Argo CD or a watched namespace", "reason", cond.Reason, "message", cond.Message)
		return ctrl.Result{RequeueAfter: recheckAfter + rand.N(recheckAfter/2)}, nil
	}
	return ctrl.Result{}, nil
}

// argoCDInstalled says whether the Application CRD is established.
func (r *Reconciler) argoCDInstalled(ctx context.Context) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Managed.Get(ctx, types.NamespacedName{Name: ApplicationCRDName}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading CRD %s: %w", ApplicationCRDName, err)
	}
	if crd.DeletionTimestamp != nil {
		return false, nil
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// missingNamespaces lists the watched namespaces that do not exist (or are going away).
func (r *Reconciler) missingNamespaces(ctx context.Context) ([]string, error) {
	var missing []string
	for _, name := range r.Namespaces {
		ns := &corev1.Namespace{}
		err := r.Managed.Get(ctx, types.NamespacedName{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("reading namespace %s: %w", name, err)
		case ns.DeletionTimestamp != nil:
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// applicationsWatchedCondition is the ManagedClusterAddOn condition for what is there.
// Argo CD missing comes first: without it no namespace matters. When True, its message
// names the watched namespaces: the hub quotes it when a delivered Application is never
// reported, typically because it went to a namespace not among them.
func applicationsWatchedCondition(installed bool, missing, watched []string) metav1.Condition {
	cond := metav1.Condition{Type: apps.ConditionApplicationsWatched}
	switch {
	case !installed:
		cond.Status, cond.Reason = metav1.ConditionFalse, apps.ReasonArgoCDNotInstalled
		cond.Message = fmt.Sprintf("Argo CD is not installed on the cluster: CRD %s not found or not established. "+
			"Applications are reported as soon as it is installed.", ApplicationCRDName)
	case len(missing) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, apps.ReasonWatchedNamespaceMissing
		cond.Message = fmt.Sprintf("Watched namespaces not found on the cluster: %s. "+
			"Their Applications are reported as soon as they exist.", strings.Join(missing, ", "))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, apps.ReasonApplicationsWatched
		cond.Message = fmt.Sprintf("Watching Argo CD Applications in %s.", phrase.Namespaces(watched))
	}
	return cond
}

// setConditions patches the conditions onto the ManagedClusterAddOn's status in one
// write when any changed, with an optimistic lock so the conditions other components
// keep there are never overwritten by a stale copy; a conflict is retried through the queue.
func (r *Reconciler) setConditions(ctx context.Context, conds ...metav1.Condition) error {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	key := types.NamespacedName{Namespace: r.ClusterName, Name: apps.AddonName}
	if err := r.HubReader.Get(ctx, key, mca); err != nil {
		return fmt.Errorf("reading ManagedClusterAddOn %s on the hub: %w", key, err)
	}
	before := mca.DeepCopy()
	var changed []metav1.Condition
	for _, cond := range conds {
		cond.ObservedGeneration = mca.Generation
		if meta.SetStatusCondition(&mca.Status.Conditions, cond) {
			changed = append(changed, cond)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if err := r.HubWriter.Status().Patch(ctx, mca, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting the conditions of ManagedClusterAddOn %s: %w", key, err)
	}
	for _, cond := range changed {
		ctrl.LoggerFrom(ctx).V(2).Info("ManagedClusterAddOn condition changed", "type", cond.Type, "status", cond.Status, "reason", cond.Reason)
	}
	return nil
}
