package tenancy

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

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
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
	appProjectIndex = "tenancy.project"
	// bindingSetIndex indexes ManagedClusterSetBindings by the set they bind.
	bindingSetIndex = "tenancy.clusterSet"
)

// applicationGVK is the hub Application's kind, read as stored (unstructured) as the
// propagation controller watches it.
var applicationGVK = argov1alpha1.SchemeGroupVersion.WithKind(argoapp.ApplicationKind)

// New returns the checks o enforces (nil when none) and adds to mgr the cache of Argo
// CD's namespace they read: its AppProjects, argocd-cmd-params-cm alone among its
// ConfigMaps, and the GitOpsClusters' cluster Secrets alone among its Secrets.
func New(mgr ctrl.Manager, o Options) (*Checker, error) {
	if !o.any() {
		return nil, nil
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
		return nil, fmt.Errorf("creating the cache of Argo CD's namespace %s: %w", o.ArgoCDNamespace, err)
	}
	if err := mgr.Add(argo); err != nil {
		return nil, fmt.Errorf("adding the cache of Argo CD's namespace %s: %w", o.ArgoCDNamespace, err)
	}
	return &Checker{opts: o, argo: argo.GetClient(), argoCache: argo, hub: mgr.GetClient(), apps: mgr.GetCache()}, nil
}

// Watch adds to b, the builder of a controller of hub Applications as stored, the indexes
// and watches of the enforced checks: each maps a change of what a check reads to the
// pulled Applications it concerns. appsByCluster names the caller's index of those
// Applications by target cluster (pullmodel.TargetCluster). A nil Checker adds none.
func (t *Checker) Watch(mgr ctrl.Manager, b *builder.Builder, appsByCluster string) (*builder.Builder, error) {
	if t == nil {
		return b, nil
	}
	o, argo := t.opts, t.argoCache
	r := mapper{Checker: t, appsByCluster: appsByCluster}
	ctx := context.Background()
	if o.CheckApplicationNamespaces {
		b = b.WatchesRawSource(source.Kind(argo.GetCache(), &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(r.cmdParamsToApps)))
	}
	if o.CheckProjects {
		if err := mgr.GetFieldIndexer().IndexField(ctx, storedApplication(), appProjectIndex, indexAppByProject); err != nil {
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

// ClusterChanges passes the ManagedCluster events that can change a check's verdict:
// label changes when cluster sets are checked (a set's membership is by label), none
// otherwise.
func (t *Checker) ClusterChanges() predicate.Predicate {
	if t != nil && t.opts.CheckClusterSetBindings {
		return predicate.LabelChangedPredicate{}
	}
	return predicate.NewPredicateFuncs(func(client.Object) bool { return false })
}

// storedApplication is an empty hub Application as stored.
func storedApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	return u
}

// mapper maps the changes the checks read to the Applications they concern.
type mapper struct {
	*Checker
	appsByCluster string
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
func (r mapper) pulledApps(ctx context.Context, what string, opts ...client.ListOption) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind(applicationGVK.Kind + "List"))
	opts = append(opts, client.HasLabels{apps.LabelPullToOCMManagedCluster})
	if err := r.apps.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Applications of "+what)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func (r mapper) projectToApps(ctx context.Context, p *argov1alpha1.AppProject) []reconcile.Request {
	return r.pulledApps(ctx, "AppProject "+p.Name, client.MatchingFields{appProjectIndex: p.Name})
}

// clusterSecretToApps: a cluster Secret names the cluster (data "name") whose
// Applications' destination it is. Called with the old and the new Secret of an update.
func (r mapper) clusterSecretToApps(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	name := string(s.Data["name"])
	if name == "" {
		return nil
	}
	return r.pulledApps(ctx, "cluster Secret "+klog.KObj(s).String(), client.MatchingFields{r.appsByCluster: name})
}

func (r mapper) bindingToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.pulledApps(ctx, "namespace "+obj.GetNamespace(), client.InNamespace(obj.GetNamespace()))
}

// clusterSetToApps: a set's selector concerns the Applications of the namespaces it is
// bound to.
func (r mapper) clusterSetToApps(ctx context.Context, obj client.Object) []reconcile.Request {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.hub.List(ctx, bindings, client.MatchingFields{bindingSetIndex: obj.GetName()}); err != nil {
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
func (r mapper) cmdParamsToApps(ctx context.Context, cm *corev1.ConfigMap) []reconcile.Request {
	if cm.Name != CmdParamsConfigMap {
		return nil
	}
	patterns := acceptedNamespaces(Options{}, cm)
	if len(patterns) == 0 {
		return nil
	}
	all := r.pulledApps(ctx, "ConfigMap "+CmdParamsConfigMap)
	reqs := all[:0]
	for _, req := range all {
		// Argo CD's own namespace is always accepted: no change of cm concerns it.
		if req.Namespace != r.opts.ArgoCDNamespace &&
			security.IsNamespaceEnabled(req.Namespace, r.opts.ArgoCDNamespace, patterns) {
			reqs = append(reqs, req)
		}
	}
	return reqs
}
