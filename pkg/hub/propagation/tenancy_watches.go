package propagation

// How changes to what the tenancy checks read reach the Applications they concern, and
// only those: each event is mapped through an index (Applications by project, by
// namespace, by target cluster; bindings by cluster set), never by listing the fleet.
// The one exception is argocd-cmd-params-cm, whose application.namespaces concerns every
// namespace it matches: its change lists the pulled Applications once.

import (
	"context"
	"fmt"
	"net/http"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/util/security"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

const (
	// appProjectIndex indexes Applications by the AppProject they use.
	appProjectIndex = "propagation.project"
	// bindingSetIndex indexes ManagedClusterSetBindings by the set they bind.
	bindingSetIndex = "propagation.clusterSet"
)

// newTenancy returns the checks o enforces (nil when none) and adds to mgr the cache of
// Argo CD's namespace they read: its AppProjects, argocd-cmd-params-cm alone among its
// ConfigMaps, and the GitOpsClusters' cluster Secrets alone among its Secrets.
func newTenancy(mgr ctrl.Manager, o TenancyOptions) (*tenancy, cluster.Cluster, error) {
	if !o.any() {
		return nil, nil, nil
	}
	argo, err := cluster.New(mgr.GetConfig(), func(co *cluster.Options) {
		co.Scheme = mgr.GetScheme()
		co.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mgr.GetRESTMapper(), nil }
		co.HTTPClient = mgr.GetHTTPClient()
		co.Cache = cache.Options{
			DefaultNamespaces: map[string]cache.Config{o.ArgoCDNamespace: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", CmdParamsConfigMap)},
				&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{
					apps.LabelArgoSecretType: apps.ArgoSecretTypeCluster, apps.LabelManagedBy: apps.ManagedByValue})},
			},
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the cache of Argo CD's namespace %s: %w", o.ArgoCDNamespace, err)
	}
	if err := mgr.Add(argo); err != nil {
		return nil, nil, fmt.Errorf("adding the cache of Argo CD's namespace %s: %w", o.ArgoCDNamespace, err)
	}
	return &tenancy{opts: o, argo: argo.GetClient(), hub: mgr.GetClient()}, argo, nil
}

// watchTenancy adds to b the indexes and watches of the enforced checks.
func (r *reconciler) watchTenancy(mgr ctrl.Manager, argo cluster.Cluster, b *builder.Builder) (*builder.Builder, error) {
	o := r.tenancy.opts
	ctx := context.Background()
	if o.CheckApplicationNamespaces {
		b = b.WatchesRawSource(source.Kind(argo.GetCache(), &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(r.cmdParamsToApps)))
	}
	if o.CheckProjects {
		if err := mgr.GetFieldIndexer().IndexField(ctx, newApplicationObject(), appProjectIndex, indexAppByProject); err != nil {
			return nil, fmt.Errorf("indexing Applications by AppProject: %w", err)
		}
		b = b.WatchesRawSource(source.Kind(argo.GetCache(), &argov1alpha1.AppProject{},
			handler.TypedEnqueueRequestsFromMapFunc(r.projectToApps))).
			WatchesRawSource(source.Kind(argo.GetCache(), &corev1.Secret{},
				handler.TypedEnqueueRequestsFromMapFunc(r.clusterSecretToApps)))
	}
	if o.CheckClusterSetBindings {
		if err := mgr.GetFieldIndexer().IndexField(ctx, &clusterv1beta2.ManagedClusterSetBinding{}, bindingSetIndex, func(obj client.Object) []string {
			if b, ok := obj.(*clusterv1beta2.ManagedClusterSetBinding); ok && b.Spec.ClusterSet != "" {
				return []string{b.Spec.ClusterSet}
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("indexing ManagedClusterSetBindings by set: %w", err)
		}
		b = b.Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.bindingToApps)).
			Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.clusterSetToApps),
				builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	return b, nil
}

// clusterPredicate passes the ManagedCluster events that can change a delivery decision:
// those of clusterTargetability and, when cluster sets are checked, label changes (a
// set's membership is by label).
func (r *reconciler) clusterPredicate() predicate.Predicate {
	if r.tenancy != nil && r.tenancy.opts.CheckClusterSetBindings {
		return predicate.Or(clusterTargetability(), predicate.LabelChangedPredicate{})
	}
	return clusterTargetability()
}

func indexAppByProject(obj client.Object) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	p, _, _ := unstructured.NestedString(u.Object, "spec", "project")
	if p == "" {
		// Argo CD's ApplicationSpec.GetProject.
		p = "default"
	}
	return []string{p}
}

// pulledApps are the Applications carrying the pull label that opts select.
func (r *reconciler) pulledApps(ctx context.Context, what string, opts ...client.ListOption) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind(applicationGVK.Kind + "List"))
	opts = append(opts, client.HasLabels{apps.LabelPullToOCMManagedCluster})
	if err := r.cache.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of "+what)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func (r *reconciler) projectToApps(ctx context.Context, p *argov1alpha1.AppProject) []reconcile.Request {
	return r.pulledApps(ctx, "AppProject "+p.Name, client.MatchingFields{appProjectIndex: p.Name})
}

// clusterSecretToApps: a cluster Secret names the cluster (data "name") whose
// Applications' destination it is. Called with the old and the new Secret of an update.
func (r *reconciler) clusterSecretToApps(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	name := string(s.Data["name"])
	if name == "" {
		return nil
	}
	return r.pulledApps(ctx, "cluster Secret "+klog.KObj(s).String(), client.MatchingFields{appClusterIndex: name})
}

func (r *reconciler) bindingToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.pulledApps(ctx, "namespace "+obj.GetNamespace(), client.InNamespace(obj.GetNamespace()))
}

// clusterSetToApps: a set's selector concerns the Applications of the namespaces it is
// bound to.
func (r *reconciler) clusterSetToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.client.List(ctx, bindings, client.MatchingFields{bindingSetIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the bindings of a ManagedClusterSet", "managedClusterSet", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	seen := map[string]bool{}
	for i := range bindings.Items {
		ns := bindings.Items[i].Namespace
		if !seen[ns] {
			seen[ns] = true
			reqs = append(reqs, r.pulledApps(ctx, "namespace "+ns, client.InNamespace(ns))...)
		}
	}
	return reqs
}

// cmdParamsToApps: the Applications outside Argo CD's namespace whose namespace cm
// accepts. Called with the old and the new ConfigMap of an update, so a namespace
// removed from the list is re-checked too.
func (r *reconciler) cmdParamsToApps(ctx context.Context, cm *corev1.ConfigMap) []reconcile.Request {
	if cm.Name != CmdParamsConfigMap {
		return nil
	}
	patterns := acceptedNamespaces(TenancyOptions{}, cm)
	if len(patterns) == 0 {
		return nil
	}
	all := r.pulledApps(ctx, "ConfigMap "+CmdParamsConfigMap)
	reqs := all[:0]
	for _, req := range all {
		// Argo CD's own namespace is always accepted: no change of cm concerns it.
		if req.Namespace != r.tenancy.opts.ArgoCDNamespace &&
			security.IsNamespaceEnabled(req.Namespace, r.tenancy.opts.ArgoCDNamespace, patterns) {
			reqs = append(reqs, req)
		}
	}
	return reqs
}
