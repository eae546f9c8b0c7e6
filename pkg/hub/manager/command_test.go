package manager

import (
	"slices"
	"strings"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/cmp"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestManifestWorkCacheHoldsOnlyPulledWorks: the propagation and application status
// controllers read the manager's cache; a hub-rendered ManifestWork must never be in it,
// or propagation would delete it as a stale work of its Application.
func TestManifestWorkCacheHoldsOnlyPulledWorks(t *testing.T) {
	var selector labels.Selector
	for obj, by := range CacheOptionsFor(nil).ByObject {
		if _, ok := obj.(*workv1.ManifestWork); ok {
			selector = by.Label
		}
	}
	if selector == nil {
		t.Fatal("the manager caches every ManifestWork")
	}

	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{
			Name: "guestbook", Namespace: "argocd", UID: "0f4c1d2e-0000-0000-0000-000000000000",
			Labels:      map[string]string{apps.LabelPullToOCMManagedCluster: "true"},
			Annotations: map[string]string{apps.AnnotationOCMManagedCluster: "cluster1"},
		},
		Spec: argov1alpha1.ApplicationSpec{Destination: argov1alpha1.ApplicationDestination{Namespace: "guestbook"}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(app)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := propagation.BuildManifestWork(&unstructured.Unstructured{Object: obj}, requests.Carried{})
	if err != nil {
		t.Fatal(err)
	}
	if !selector.Matches(labels.Set(pulled.Labels)) {
		t.Errorf("the cache selector %q does not hold the pull model's ManifestWork (labels %v)", selector, pulled.Labels)
	}

	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("guestbook")
	cm.SetName("settings")
	rendered, err := cmp.BuildManifestWork([]cmp.Manifest{{Object: cm, Origin: "cm.yaml document 1"}},
		cmp.Environment{AppName: "guestbook", AppNamespace: "argocd", Cluster: "cluster1"})
	if err != nil {
		t.Fatal(err)
	}
	if selector.Matches(labels.Set(rendered.Labels)) {
		t.Errorf("the cache selector %q holds hub-rendered ManifestWorks (labels %v)", selector, rendered.Labels)
	}
}

// TestSetupControllersWithRefusesAnUnknownName: a suite or caller naming a controller that
// does not exist fails before anything is registered, rather than running none.
func TestSetupControllersWithRefusesAnUnknownName(t *testing.T) {
	err := SetupControllersWith(nil, DefaultControllerOptions(), propagation.ControllerName, "propagaton")
	if err == nil || !strings.Contains(err.Error(), `"propagaton"`) {
		t.Fatalf("SetupControllersWith with a misspelt name = %v, want an error naming it", err)
	}
}

// TestTenancyFlags: every tenancy check is enforced unless a flag relaxes it, and the
// flags reach the propagation controller's options.
func TestTenancyFlags(t *testing.T) {
	defaults := NewOptions().Controllers.Propagation.Tenancy
	if !defaults.CheckApplicationNamespaces || !defaults.CheckProjects || !defaults.CheckClusterSetBindings || defaults.ArgoCDNamespace != "argocd" {
		t.Fatalf("defaults %+v: want every check enforced, Argo CD in argocd", defaults)
	}
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--argocd-namespace=openshift-gitops", "--check-application-namespaces=false",
		"--check-projects=false", "--check-cluster-set-bindings=false", "--application-namespaces=team-*,ops"}); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"argocd-namespace": "openshift-gitops", "check-application-namespaces": "false",
		"check-projects": "false", "check-cluster-set-bindings": "false", "application-namespaces": "[team-*,ops]"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
}

// TestDeprecatedArgoCDNamespacesFlag: --argocd-namespaces, the old name of
// --gitopscluster-argocd-namespaces, still sets the GitOpsCluster controller's Argo CD
// namespaces (and so the manager's cache of Secrets and ConfigMaps) for one release.
func TestDeprecatedArgoCDNamespacesFlag(t *testing.T) {
	for _, flag := range []string{"gitopscluster-argocd-namespaces", "argocd-namespaces"} {
		o := NewOptions()
		cmd := &cobra.Command{Use: "manager"}
		o.AddFlags(cmd)
		if err := cmd.ParseFlags([]string{"--" + flag + "=argocd,openshift-gitops"}); err != nil {
			t.Fatalf("--%s: %v", flag, err)
		}
		if got, want := o.Controllers.GitOpsCluster.ArgoNamespaces, []string{"argocd", "openshift-gitops"}; !slices.Equal(got, want) {
			t.Errorf("--%s: GitOpsCluster.ArgoNamespaces = %q, want %q", flag, got, want)
		}
		if tenancy := cmd.Flags().Lookup("argocd-namespace").Value.String(); tenancy != "argocd" {
			t.Errorf("--%s changed the tenancy checks' --argocd-namespace to %q", flag, tenancy)
		}
	}
	if f := NewCommand().Flags().Lookup("argocd-namespaces"); f == nil || !strings.Contains(f.Deprecated, "--gitopscluster-argocd-namespaces") {
		t.Errorf("--argocd-namespaces is not marked deprecated in favour of --gitopscluster-argocd-namespaces: %+v", f)
	}
}

// TestCacheTrimsOnlyTheStoredApplications: the manager's cache transform drops managed
// fields everywhere and the status propagation does not read only from the hub
// Applications it caches as stored; the typed ones, which appstatus mirrors into, keep it.
func TestCacheTrimsOnlyTheStoredApplications(t *testing.T) {
	transform := CacheOptionsFor(nil).DefaultTransform
	typed := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: "argocd",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd-pull-addon"}}},
		Status: argov1alpha1.ApplicationStatus{Resources: []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "guestbook-ui"}}}}
	out, err := transform(typed.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*argov1alpha1.Application)
	if got.ManagedFields != nil || len(got.Status.Resources) != 1 {
		t.Errorf("typed Application: managed fields %v (want none), resources %v (want kept)", got.ManagedFields, got.Status.Resources)
	}

	stored, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: stored}
	u.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("Application"))
	out, err = transform(u)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*unstructured.Unstructured)
	if trimmed.GetManagedFields() != nil {
		t.Error("stored Application kept its managed fields")
	}
	if _, found, _ := unstructured.NestedSlice(trimmed.Object, "status", "resources"); found {
		t.Error("stored Application kept status.resources, which propagation does not read")
	}
}

// TestResourceTreeFlags: the resource tree controller is on by default, writes to Argo
// CD's Redis Service in --argocd-namespace with gzip, and the flags reach its options.
func TestResourceTreeFlags(t *testing.T) {
	defaults := NewOptions().Controllers.ResourceTree
	defaults.ArgoCDNamespace = "argocd"
	if !defaults.Enabled || defaults.Address() != "argocd-redis.argocd.svc:6379" || defaults.RedisSecret != "argocd-redis" ||
		defaults.RedisCompression != "gzip" {
		t.Fatalf("defaults %+v (address %s): want enabled, argocd-redis.argocd.svc:6379, Secret argocd-redis, gzip", defaults, defaults.Address())
	}
	o := NewOptions()
	cmd := &cobra.Command{Use: "manager"}
	o.AddFlags(cmd)
	if err := cmd.ParseFlags([]string{"--resource-trees=false", "--argocd-redis-address=redis.example:6380",
		"--argocd-redis-secret=hub-redis", "--argocd-redis-compression=none"}); err != nil {
		t.Fatal(err)
	}
	got := o.Controllers.ResourceTree
	if got.Enabled || got.Address() != "redis.example:6380" || got.RedisSecret != "hub-redis" || got.RedisCompression != "none" {
		t.Errorf("after the flags: %+v", got)
	}
}
