// Package tenancy decides who may deliver where. A marked Application reaches a cluster's
// Argo CD, which usually runs as cluster-admin there, so the hub delivers it only when the
// hub's Argo CD and OCM would both let its author use that cluster: Argo CD accepts
// Applications in its namespace, its AppProject permits it, and the target cluster is in a
// ManagedClusterSet bound to its namespace. A refusal is bad input like any other: the
// caller keeps the work delivered before, and an InvalidSpecError condition and a Warning
// Event say which check failed and how to fix it. The messages start as Argo CD's own do.
//
// It is a hub library, not a reconciler: the propagation controller calls Check and
// registers the watches that bring an Application back when what a check read changes
// (Checker.Watch).
package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/util/security"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	sdkclusterv1beta2 "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Event reasons of the tenancy checks, one per way a check fails.
const (
	ReasonNamespaceNotPermitted   = "ApplicationNamespaceNotPermitted"
	ReasonProjectNotFound         = "AppProjectNotFound"
	ReasonProjectNamespaceRefused = "AppProjectSourceNamespaceNotPermitted"
	ReasonProjectRepoRefused      = "AppProjectSourceRepoNotPermitted"
	ReasonProjectDestRefused      = "AppProjectDestinationNotPermitted"
	ReasonClusterSetNotBound      = "ManagedClusterSetNotBound"
)

const (
	// CmdParamsConfigMap is Argo CD's ConfigMap of command parameters, in its namespace.
	CmdParamsConfigMap = "argocd-cmd-params-cm"
	// KeyApplicationNamespaces lists, comma-separated, the namespaces besides its own
	// where Argo CD accepts Applications ("apps in any namespace"); globs and /regexp/
	// as Argo CD reads them.
	KeyApplicationNamespaces = "application.namespaces"
	// DefaultArgoCDNamespace is where the hub's Argo CD runs unless told otherwise.
	DefaultArgoCDNamespace = "argocd"
)

// Options say where the hub's Argo CD runs and which checks are enforced. A
// single-tenant hub may relax each check; the default enforces all three.
type Options struct {
	// ArgoCDNamespace is the hub Argo CD's namespace: its AppProjects, its
	// argocd-cmd-params-cm and the GitOpsClusters' cluster Secrets are there.
	ArgoCDNamespace string
	// ApplicationNamespaces are accepted besides those of argocd-cmd-params-cm (same
	// patterns), for hubs that configure Argo CD another way.
	ApplicationNamespaces []string
	// CheckApplicationNamespaces: the Application's namespace must be one Argo CD accepts.
	CheckApplicationNamespaces bool
	// CheckProjects: the Application's AppProject must exist and permit it.
	CheckProjects bool
	// CheckClusterSetBindings: the target cluster must be in a set bound to the
	// Application's namespace.
	CheckClusterSetBindings bool
}

// DefaultOptions enforce every check with Argo CD in namespace argocd.
func DefaultOptions() Options {
	return Options{ArgoCDNamespace: DefaultArgoCDNamespace,
		CheckApplicationNamespaces: true, CheckProjects: true, CheckClusterSetBindings: true}
}

func (o Options) any() bool {
	return o.CheckApplicationNamespaces || o.CheckProjects || o.CheckClusterSetBindings
}

// Refusal is why a check refuses an Application: the Event reason, and a message saying
// what is wrong and how to fix it.
type Refusal struct {
	Reason, Message string
}

// Condition is the hub condition a refusal sets: a refusal is bad input like any other.
func (*Refusal) Condition() argov1alpha1.ApplicationConditionType {
	return pullmodel.ConditionInvalidSpec
}

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Checker reads what the checks need: AppProjects, argocd-cmd-params-cm and the cluster
// Secrets from argo (a cache of Argo CD's namespace only), cluster sets and bindings from
// hub (the manager's cache), and the hub Applications as stored from apps (for the
// watches).
type Checker struct {
	opts      Options
	argo      client.Reader
	argoCache cluster.Cluster
	hub       client.Reader
	apps      client.Reader
}

// Check applies the enforced checks, in the order a user meets them, to app, marked,
// valid and targeting cluster (which exists): nil when they all pass. A nil Checker
// enforces none.
func (t *Checker) Check(ctx context.Context, app *argov1alpha1.Application, cluster *clusterv1.ManagedCluster) (*Refusal, error) {
	if t == nil || !t.opts.any() {
		return nil, nil
	}
	if t.opts.CheckApplicationNamespaces {
		params, err := t.cmdParams(ctx)
		if err != nil {
			return nil, err
		}
		if p := checkAppNamespace(t.opts, app, params); p != nil {
			return p, nil
		}
	}
	if t.opts.CheckProjects {
		proj, err := t.project(ctx, app.Spec.GetProject())
		if err != nil {
			return nil, err
		}
		dest, err := t.destinationCluster(ctx, cluster.Name)
		if err != nil {
			return nil, err
		}
		if p := checkProject(t.opts, app, proj, dest); p != nil {
			return p, nil
		}
	}
	if t.opts.CheckClusterSetBindings {
		sets, err := t.boundClusterSets(ctx, app.Namespace)
		if err != nil {
			return nil, err
		}
		return checkClusterSets(app, cluster, sets), nil
	}
	return nil, nil
}

func (t *Checker) cmdParams(ctx context.Context) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := t.argo.Get(ctx, client.ObjectKey{Namespace: t.opts.ArgoCDNamespace, Name: CmdParamsConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting ConfigMap %s/%s: %w", t.opts.ArgoCDNamespace, CmdParamsConfigMap, err)
	}
	return cm, nil
}

func (t *Checker) project(ctx context.Context, name string) (*argov1alpha1.AppProject, error) {
	proj := &argov1alpha1.AppProject{}
	err := t.argo.Get(ctx, client.ObjectKey{Namespace: t.opts.ArgoCDNamespace, Name: name}, proj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting AppProject %s/%s: %w", t.opts.ArgoCDNamespace, name, err)
	}
	return proj, nil
}

// destinationCluster is the target cluster as Argo CD knows it: the name and server of
// the cluster Secret a GitOpsCluster registers for it (and its project, for projects that
// permit only their own clusters). Without such a Secret it is what a GitOpsCluster
// would register: the cluster's name and placeholder server.
func (t *Checker) destinationCluster(ctx context.Context, cluster string) (*argov1alpha1.Cluster, error) {
	dest := &argov1alpha1.Cluster{Name: cluster, Server: apps.PlaceholderServer(cluster)}
	s := &corev1.Secret{}
	err := t.argo.Get(ctx, client.ObjectKey{Namespace: t.opts.ArgoCDNamespace, Name: apps.ClusterSecretName(cluster)}, s)
	switch {
	case apierrors.IsNotFound(err):
		return dest, nil
	case err != nil:
		return nil, fmt.Errorf("getting the cluster Secret of %s: %w", cluster, err)
	}
	if v := string(s.Data["name"]); v != "" {
		dest.Name = v
	}
	if v := string(s.Data["server"]); v != "" {
		dest.Server = v
	}
	dest.Project = string(s.Data["project"])
	return dest, nil
}

// boundSet is a ManagedClusterSet bound to a namespace.
type boundSet struct {
	binding *clusterv1beta2.ManagedClusterSetBinding
	set     *clusterv1beta2.ManagedClusterSet
}

// boundClusterSets are the ManagedClusterSets bound to namespace: its Bound
// ManagedClusterSetBindings' sets that exist.
func (t *Checker) boundClusterSets(ctx context.Context, namespace string) ([]boundSet, error) {
	bindings, err := sdkclusterv1beta2.GetBoundManagedClusterSetBindings(namespace, bindingLister{ctx: ctx, r: t.hub})
	if err != nil {
		return nil, fmt.Errorf("listing the ManagedClusterSetBindings of namespace %s: %w", namespace, err)
	}
	var out []boundSet
	for _, b := range bindings {
		set := &clusterv1beta2.ManagedClusterSet{}
		if err := t.hub.Get(ctx, client.ObjectKey{Name: b.Spec.ClusterSet}, set); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting ManagedClusterSet %s: %w", b.Spec.ClusterSet, err)
		}
		out = append(out, boundSet{binding: b, set: set})
	}
	return out, nil
}

// bindingLister lists ManagedClusterSetBindings from a cache for the sdk-go helpers.
type bindingLister struct {
	ctx context.Context
	r   client.Reader
}

func (l bindingLister) List(namespace string, selector labels.Selector) ([]*clusterv1beta2.ManagedClusterSetBinding, error) {
	list := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := l.r.List(l.ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	out := make([]*clusterv1beta2.ManagedClusterSetBinding, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// acceptedNamespaces are the namespace patterns besides its own where Argo CD accepts
// Applications: application.namespaces of params (nil when absent), split as Argo CD
// splits it, and the configured extra ones.
func acceptedNamespaces(o Options, params *corev1.ConfigMap) []string {
	out := slices.Clone(o.ApplicationNamespaces)
	if params == nil {
		return out
	}
	for _, ns := range strings.Split(params.Data[KeyApplicationNamespaces], ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// checkAppNamespace: Argo CD accepts Applications in app's namespace (params is
// argocd-cmd-params-cm, nil when absent).
func checkAppNamespace(o Options, app *argov1alpha1.Application, params *corev1.ConfigMap) *Refusal {
	if security.IsNamespaceEnabled(app.Namespace, o.ArgoCDNamespace, acceptedNamespaces(o, params)) {
		return nil
	}
	return refuse(ReasonNamespaceNotPermitted,
		"%s: the hub's Argo CD accepts Applications only in its namespace %s and in those listed in %s of ConfigMap %s/%s: "+
			"create the Application in one of them, or have the hub's admin add %s there (or to the chart value tenancy.applicationNamespaces)",
		security.NamespaceNotPermittedError(app.Namespace), o.ArgoCDNamespace, KeyApplicationNamespaces, o.ArgoCDNamespace, CmdParamsConfigMap, app.Namespace)
}

// checkProject: the AppProject proj (nil when it does not exist) permits app as Argo CD
// would, its destination being the target cluster dest with app's destination namespace.
func checkProject(o Options, app *argov1alpha1.Application, proj *argov1alpha1.AppProject, dest *argov1alpha1.Cluster) *Refusal {
	name := app.Spec.GetProject()
	if proj == nil {
		return refuse(ReasonProjectNotFound,
			"Application referencing project %s which does not exist: create AppProject %s/%s, or name an existing project in spec.project",
			name, o.ArgoCDNamespace, name)
	}
	if !proj.IsAppNamespacePermitted(app, o.ArgoCDNamespace) {
		return refuse(ReasonProjectNamespaceRefused,
			"%s: add %s to spec.sourceNamespaces of AppProject %s/%s, or use a project that lists it",
			argov1alpha1.NewErrApplicationNotAllowedToUseProject(app.Name, app.Namespace, name), app.Namespace, o.ArgoCDNamespace, name)
	}
	for _, src := range sourcesOf(app) {
		if !proj.IsSourcePermitted(src) {
			return refuse(ReasonProjectRepoRefused,
				"application repo %s is not permitted in project '%s': add it to spec.sourceRepos of AppProject %s/%s, or use a project that permits it",
				src.RepoURL, name, o.ArgoCDNamespace, name)
		}
	}
	want := argov1alpha1.ApplicationDestination{Name: dest.Name, Server: dest.Server, Namespace: app.Spec.Destination.Namespace}
	ok, err := proj.IsDestinationPermitted(want, func(string) ([]*argov1alpha1.Cluster, error) {
		if dest.Project == proj.Name {
			return []*argov1alpha1.Cluster{dest}, nil
		}
		return nil, nil
	})
	if err != nil || !ok {
		return refuse(ReasonProjectDestRefused,
			"application destination name '%s' (server '%s', ManagedCluster %s) and namespace '%s' do not match any of the allowed destinations in project '%s': "+
				"add the cluster and namespace to spec.destinations of AppProject %s/%s, or use a project that permits them",
			want.Name, want.Server, pullmodel.TargetCluster(app), want.Namespace, name, o.ArgoCDNamespace, name)
	}
	return nil
}

// sourcesOf are the repositories app deploys from, as Argo CD validates them: the dry
// source of a source hydrator, else every source.
func sourcesOf(app *argov1alpha1.Application) []argov1alpha1.ApplicationSource {
	if app.Spec.SourceHydrator != nil {
		return []argov1alpha1.ApplicationSource{app.Spec.SourceHydrator.GetDrySource()}
	}
	return app.Spec.GetSources()
}

// checkClusterSets: cluster is in one of sets, the ManagedClusterSets bound to app's
// namespace.
func checkClusterSets(app *argov1alpha1.Application, cluster *clusterv1.ManagedCluster, sets []boundSet) *Refusal {
	names := make([]string, 0, len(sets))
	for _, b := range sets {
		sel, err := sdkclusterv1beta2.BuildClusterSelector(b.set)
		if err != nil {
			// A set with a bad selector holds no cluster, as for OCM's placement.
			continue
		}
		if sel.Matches(labels.Set(cluster.Labels)) {
			return nil
		}
		names = append(names, b.set.Name)
	}
	bound := "none"
	if len(names) > 0 {
		bound = strings.Join(names, ", ")
	}
	return refuse(ReasonClusterSetNotBound,
		"ManagedCluster %s named by annotation %s is in no ManagedClusterSet bound to namespace %s (bound: %s): "+
			"have the hub's admin bind a set holding it to %s (`clusteradm clusterset bind <set> --namespace %s`, a ManagedClusterSetBinding), or target a cluster of a bound set",
		cluster.Name, apps.AnnotationOCMManagedCluster, app.Namespace, bound, app.Namespace, app.Namespace)
}
