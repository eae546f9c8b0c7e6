// Package gitopscluster reconciles GitOpsClusters: the clusters a Placement decides on
// become Argo CD cluster Secrets (blank, pull model) in the Argo CD namespace, next to the
// ConfigMaps and RBAC the ApplicationSet placement generator needs.
//
// Choices worth knowing:
//   - Every cluster Secret is blank: data `name` (the cluster) and `server`
//     (apps.PlaceholderServer, "https://<cluster>-control-plane"), no credentials. That holds
//     when spec.createBlankClusterSecrets is false or unset too: this product is the pull
//     model only and the hub keeps no cluster credentials, so there is nothing else to
//     write. The ClusterSecretsSynced condition then has reason BlankClusterSecretsImplied
//     to say so, and the GitOpsCluster is still successful.
//   - GitOpsClusters selecting the same cluster for the same Argo CD namespace share its
//     Secret: each is an owner (a label and an annotation per GitOpsCluster, owners.go),
//     and the last owner to let go deletes it. Secrets this controller creates carry
//     apps.LabelManagedBy and their owners' marks; it only ever updates or deletes those. A
//     Secret of the same name no GitOpsCluster created is a conflict: left alone,
//     reported in the status.
//   - While the Placement or the Argo CD namespace does not resolve, existing cluster
//     Secrets are kept: a typo in the spec should not unregister every cluster from Argo CD.
//     A finalizer lets go of them when the GitOpsCluster is deleted; a GitOpsCluster gone
//     without it (finalizer removed by hand, deleted while no manager ran) is let go of when
//     a Secret naming it is seen, at the latest when the manager starts.
//   - The generator ConfigMaps, Role and RoleBinding are shared by all GitOpsClusters of an
//     Argo CD namespace; they are ensured (compared, written only on difference) and stay
//     when a GitOpsCluster goes. One that exists without LabelManagedBy (written by hand or
//     by another tool) is a conflict: left alone, reported in the status.
//   - With Options.ArgoNamespaces set (the chart always sets it), a GitOpsCluster may name
//     only one of those as its Argo CD namespace: they are where the chart grants the
//     manager its namespaced Roles, so a team's GitOpsCluster cannot make the manager
//     register clusters in, or write RBAC into, any other namespace. Otherwise it fails
//     with ArgoNamespaceNotAllowed and nothing is written.
package gitopscluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "gitopscluster"

// EventSource is the source (reportingController) of the Events it records.
const EventSource = "argocd-pull-gitopscluster"

// Field indexes on GitOpsCluster.
const (
	// IndexPlacement is "<namespace>/<name>" of the referenced Placement.
	IndexPlacement = "gitopscluster.spec.placementRef"
	// IndexArgoNamespace is spec.argoServer.argoNamespace.
	IndexArgoNamespace = "gitopscluster.spec.argoServer.argoNamespace"
)

// conflictRetry is how long a GitOpsCluster with a conflicting Secret waits before it
// looks again (jittered).
const conflictRetry = 5 * time.Minute

// Event reasons beyond the condition reasons (Warnings use those).
const (
	// EventReasonSynced: the GitOpsCluster became successful.
	EventReasonSynced = "Synced"
)

// Options configure the controller.
type Options struct {
	// ArgoNamespaces are the Argo CD namespaces a GitOpsCluster may name in
	// spec.argoServer.argoNamespace, and the only namespaces whose Secrets, ConfigMaps,
	// Roles and RoleBindings the controller caches. Empty: any namespace, with cluster-wide
	// caches (and the cluster-wide RBAC that needs; the chart never does that).
	ArgoNamespaces []string
	// ApplicationSetControllerServiceAccount is the ServiceAccount, in the Argo CD
	// namespace, of the ApplicationSet controller the placement generator Role is bound
	// to; empty: DefaultApplicationSetControllerServiceAccount.
	ApplicationSetControllerServiceAccount string
}

// reconciler reconciles GitOpsClusters.
type reconciler struct {
	opts Options
	// client writes everything and reads GitOpsClusters, Placements, PlacementDecisions,
	// ManagedClusters and Namespaces through the manager's cache.
	client client.Client
	// owned reads, from a cache of its own, only the objects carrying
	// apps.LabelManagedBy=apps.ManagedByValue (cluster Secrets, ConfigMaps, Role, RoleBinding), so
	// the manager never caches every Secret of the hub.
	owned cluster.Cluster
	// apiReader reads what is not (yet) in the caches: a Secret or ConfigMap someone else
	// created, or an object just written.
	apiReader client.Reader
	recorder  record.EventRecorder
	now       func() time.Time
}

var _ reconcile.Reconciler = &reconciler{}

// newReconciler returns a reconciler for mgr. It adds the cache of owned objects to mgr.
func newReconciler(mgr ctrl.Manager, opts Options) (*reconciler, error) {
	if opts.ApplicationSetControllerServiceAccount == "" {
		opts.ApplicationSetControllerServiceAccount = DefaultApplicationSetControllerServiceAccount
	}
	sel := labels.SelectorFromSet(labels.Set{apps.LabelManagedBy: apps.ManagedByValue})
	owned, err := cluster.New(mgr.GetConfig(), func(o *cluster.Options) {
		o.Scheme = mgr.GetScheme()
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mgr.GetRESTMapper(), nil }
		o.HTTPClient = mgr.GetHTTPClient()
		o.Cache = cache.Options{
			DefaultLabelSelector: sel,
			DefaultTransform:     cache.TransformStripManagedFields(),
			// Only where the manager may write: its RBAC on these kinds is namespaced.
			DefaultNamespaces: namespaceConfigs(opts.ArgoNamespaces),
		}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of owned objects: %w", err)
	}
	if err := mgr.Add(owned); err != nil {
		return nil, fmt.Errorf("adding the cache of owned objects: %w", err)
	}
	return &reconciler{
		opts:      opts,
		client:    mgr.GetClient(),
		owned:     owned,
		apiReader: mgr.GetAPIReader(),
		recorder:  mgr.GetEventRecorderFor(EventSource),
		now:       time.Now,
	}, nil
}

// namespaceConfigs is a cache's DefaultNamespaces for namespaces; nil (all) when none.
func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// Setup creates the controller and registers it with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	r, err := newReconciler(mgr, opts)
	if err != nil {
		return err
	}
	return r.setupWithManager(mgr)
}

// Reconcile brings one GitOpsCluster's cluster Secrets, generator ConfigMaps and RBAC in
// line with its Placement, then writes its status once, if it changed.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)

	gc := &appsv1beta1.GitOpsCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, gc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.reconcileGone(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("reading GitOpsCluster %s: %w", req.NamespacedName, err)
	}

	if !gc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, gc)
	}
	if !controllerutil.ContainsFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer) {
		before := gc.DeepCopy()
		controllerutil.AddFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer)
		if err := r.client.Patch(ctx, gc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to GitOpsCluster %s: %w", klog.KObj(gc), err)
		}
	}

	o := r.reconcileNormal(ctx, gc)

	var res ctrl.Result
	newStatus := computeStatus(gc, o, metaNow(r.now()))
	if !equality.Semantic.DeepEqual(gc.Status, newStatus) {
		before := gc.DeepCopy()
		gc.Status = newStatus
		// Optimistic lock: a status computed from a stale cached copy must not be written,
		// nor its transition announced twice; on conflict, look again with a fresh copy.
		err := r.client.Status().Patch(ctx, gc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsConflict(err):
			log.V(4).Info("Status patch conflicted with a newer GitOpsCluster; requeueing")
			res.RequeueAfter = time.Second
		case err != nil:
			retErr = errors.Join(retErr, fmt.Errorf("patching status of GitOpsCluster %s: %w", klog.KObj(gc), err))
		default:
			log.V(2).Info("Status changed", "phase", newStatus.Phase, "message", newStatus.Message)
			r.recordTransition(gc, &before.Status, &newStatus)
		}
	}
	if len(o.conflicts)+len(o.generatorConflicts) > 0 && res.RequeueAfter == 0 {
		// A conflicting object is not in the owned cache, so its removal brings no event:
		// look again in a few minutes.
		res.RequeueAfter = wait.Jitter(conflictRetry, 0.2)
	}
	return res, errors.Join(retErr, o.secretsErr, o.generatorErr)
}

// recordTransition emits an Event when the Ready condition changes reason: a Warning with
// the failure's reason, or Normal Synced when the GitOpsCluster recovers or first succeeds.
func (r *reconciler) recordTransition(gc *appsv1beta1.GitOpsCluster, old, cur *appsv1beta1.GitOpsClusterStatus) {
	oldReason, newReason := readyReason(old), readyReason(cur)
	if oldReason == newReason && old.Phase == cur.Phase {
		return
	}
	if cur.Phase == appsv1beta1.PhaseFailed {
		r.recorder.Event(gc, corev1.EventTypeWarning, newReason, cur.Message)
		return
	}
	r.recorder.Event(gc, corev1.EventTypeNormal, EventReasonSynced, cur.Message)
}

// reconcileNormal resolves the Placement and the Argo CD namespace, then applies the
// cluster Secrets and the generator configuration. It leaves existing cluster Secrets
// alone while the Placement does not resolve: a typo in the spec should not unregister
// every cluster from Argo CD.
func (r *reconciler) reconcileNormal(ctx context.Context, gc *appsv1beta1.GitOpsCluster) outcome {
	argoNs := gc.Spec.ArgoServer.ArgoNamespace
	o := outcome{
		argoNamespace: argoNs,
		blankImplied:  gc.Spec.CreateBlankClusterSecrets == nil || !*gc.Spec.CreateBlankClusterSecrets,
	}

	if len(r.opts.ArgoNamespaces) > 0 && !slices.Contains(r.opts.ArgoNamespaces, argoNs) {
		// Checked before anything is read or written: existing cluster Secrets of an
		// earlier, allowed namespace stay, as for a namespace that does not exist.
		o.argoNamespaceNotAllowed = true
		o.allowedArgoNamespaces = r.opts.ArgoNamespaces
		return o
	}

	decisions, err := r.resolvePlacement(ctx, gc, &o)
	if err != nil {
		// A read from the cache failed: say so and retry.
		o.secretsErr = err
		return o
	}

	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: argoNs}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			o.secretsErr = fmt.Errorf("reading namespace %s: %w", argoNs, err)
			return o
		}
		o.argoNamespaceMissing = true
	} else if !ns.DeletionTimestamp.IsZero() {
		o.argoNamespaceMissing = true
	}
	if o.placementReason != "" || o.argoNamespaceMissing {
		return o
	}

	o.generatorConflicts, o.generatorErr = r.applyGeneratorConfig(ctx, argoNs)
	o.clusters, o.conflicts, o.secretsErr = r.applyClusterSecrets(ctx, gc, decidedClusters(decisions))
	return o
}

// resolvePlacement checks the placementRef and reads the Placement's decisions. A bad
// reference is recorded in o; only API errors are returned.
func (r *reconciler) resolvePlacement(ctx context.Context, gc *appsv1beta1.GitOpsCluster, o *outcome) ([]clusterv1beta1.PlacementDecision, error) {
	if reason, msg := validatePlacementRef(gc); reason != "" {
		o.placementReason, o.placementMessage = reason, msg
		return nil, nil
	}
	name := gc.Spec.PlacementRef.Name
	placement := &clusterv1beta1.Placement{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: gc.Namespace, Name: name}, placement); err != nil {
		if apierrors.IsNotFound(err) {
			o.placementReason = appsv1beta1.ReasonPlacementNotFound
			o.placementMessage = fmt.Sprintf("Placement %s/%s does not exist", gc.Namespace, name)
			return nil, nil
		}
		return nil, fmt.Errorf("reading Placement %s/%s: %w", gc.Namespace, name, err)
	}
	list := &clusterv1beta1.PlacementDecisionList{}
	if err := r.client.List(ctx, list, client.InNamespace(gc.Namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions of Placement %s/%s: %w", gc.Namespace, name, err)
	}
	o.placementMessage = fmt.Sprintf("Placement %s/%s has %d PlacementDecisions", gc.Namespace, name, len(list.Items))
	return list.Items, nil
}

// applyGeneratorConfig ensures the placement generator ConfigMaps and the ApplicationSet
// controller's Role and RoleBinding in argoNs, writing only what differs. These are shared
// by every GitOpsCluster of that Argo CD instance and stay when a GitOpsCluster goes. It
// returns the objects left alone because this controller did not create them.
func (r *reconciler) applyGeneratorConfig(ctx context.Context, argoNs string) ([]string, error) {
	var errs []error
	var conflicts []string
	collect := func(conflict string, err error) {
		if conflict != "" {
			conflicts = append(conflicts, conflict)
		}
		errs = append(errs, err)
	}
	for _, cm := range desiredConfigMaps(argoNs) {
		collect(ensure(ctx, r, "ConfigMap", cm, func(cur *corev1.ConfigMap) bool {
			if equality.Semantic.DeepEqual(cur.Data, cm.Data) {
				return false
			}
			cur.Data = cm.Data
			return true
		}))
	}
	role := desiredRole(argoNs)
	collect(ensure(ctx, r, "Role", role, func(cur *rbacv1.Role) bool {
		if equality.Semantic.DeepEqual(cur.Rules, role.Rules) {
			return false
		}
		cur.Rules = role.Rules
		return true
	}))
	rb := desiredRoleBinding(argoNs, r.opts.ApplicationSetControllerServiceAccount)
	collect(ensure(ctx, r, "RoleBinding", rb, func(cur *rbacv1.RoleBinding) bool {
		if equality.Semantic.DeepEqual(cur.Subjects, rb.Subjects) {
			return false
		}
		cur.Subjects = rb.Subjects
		return true
	}))
	return conflicts, errors.Join(errs...)
}

// ensure creates desired when missing, or patches the existing object when mutate says it
// changed it. An existing object without LabelManagedBy is not this controller's to
// change (someone wrote it by hand, or another tool owns it): it is left alone and
// returned as a conflict ("<kind> <namespace>/<name>").
func ensure[T client.Object](ctx context.Context, r *reconciler, kind string, desired T, mutate func(T) bool) (conflict string, _ error) {
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(desired)
	cur, ok := desired.DeepCopyObject().(T)
	if !ok {
		return "", fmt.Errorf("copying %s %s", kind, key)
	}
	err := r.owned.GetCache().Get(ctx, key, cur)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, cur)
	}
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating %s %s: %w", kind, key, err)
		}
		log.V(2).Info("Created "+kind, "object", key)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	if cur.GetLabels()[apps.LabelManagedBy] != apps.ManagedByValue {
		return fmt.Sprintf("%s %s", kind, key), nil
	}
	before, ok := cur.DeepCopyObject().(T)
	if !ok {
		return "", fmt.Errorf("copying %s %s", kind, key)
	}
	if !mutate(cur) {
		return "", nil
	}
	if err := r.client.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
		return "", fmt.Errorf("updating %s %s: %w", kind, key, err)
	}
	log.V(2).Info("Updated "+kind, "object", key)
	return "", nil
}

// reconcileDelete lets go of every cluster Secret gc owns (deleting those it was the last
// owner of), then removes the finalizer.
func (r *reconciler) reconcileDelete(ctx context.Context, gc *appsv1beta1.GitOpsCluster) error {
	if !controllerutil.ContainsFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer) {
		return nil
	}
	// Uncached: a Secret gc joined just before its deletion must not be missed.
	if err := r.releaseAll(ctx, r.apiReader, ownerKey(gc)); err != nil {
		return err
	}
	before := gc.DeepCopy()
	controllerutil.RemoveFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer)
	if err := r.client.Patch(ctx, gc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer from GitOpsCluster %s: %w", klog.KObj(gc), err)
	}
	return nil
}

// reconcileGone lets go of the cluster Secrets of a GitOpsCluster that no longer exists
// but is still named as an owner: one deleted while its finalizer was removed by hand, or
// while no manager ran. Every Secret's owners are reconciled when the cache of owned
// objects starts, so such an owner is found then at the latest.
func (r *reconciler) reconcileGone(ctx context.Context, key types.NamespacedName) error {
	mine, err := r.secretsOf(ctx, r.owned.GetCache(), key)
	if err != nil || len(mine) == 0 {
		return err
	}
	// The cache of GitOpsClusters may lag behind a GitOpsCluster just re-created under
	// this name: ask the API server before letting go.
	if err := r.apiReader.Get(ctx, key, &appsv1beta1.GitOpsCluster{}); !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("reading GitOpsCluster %s: %w", key, err)
		}
		return nil // it exists: its own event brings it here
	}
	// Uncached: right after a finalizer let go, the cache may still show the Secrets as
	// they were, and letting go of them again would be writes for nothing.
	return r.releaseAll(ctx, r.apiReader, key)
}

// metaNow is t as the API server stores it (whole seconds), so a status computed now
// compares equal to the same status read back.
func metaNow(t time.Time) metav1.Time { return metav1.NewTime(t).Rfc3339Copy() }
