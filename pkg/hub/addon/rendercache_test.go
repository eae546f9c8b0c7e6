package addon

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonfake "open-cluster-management.io/api/client/addon/clientset/versioned/fake"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// countingAddon renders one ConfigMap naming the cluster, and counts its renderings.
type countingAddon struct {
	renders int
	fail    error
}

func (a *countingAddon) Manifests(cluster *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	if a.fail != nil {
		return nil, a.fail
	}
	a.renders++
	return []runtime.Object{&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "open-cluster-management-agent-addon"},
		Data:       map[string]string{"cluster": cluster.Name},
	}}, nil
}

func (a *countingAddon) GetAgentAddonOptions() agent.AgentAddonOptions {
	return agent.AgentAddonOptions{AddonName: "argocd-pull"}
}

func TestRenderCacheRendersOncePerInputs(t *testing.T) {
	withConfig := func(hash string) func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) {
		return func(_ *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) {
			a.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
				DesiredConfig: &addonv1alpha1.ConfigSpecHash{
					ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "hub", Name: "argocd-pull"}, SpecHash: hash},
			}}
		}
	}
	tests := []struct {
		name       string
		change     func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn)
		wantRender bool
	}{
		{name: "nothing", change: func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) {}},
		{name: "cluster conditions and resourceVersion", change: func(c *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn) {
			c.ResourceVersion = "2"
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue}}
		}},
		{name: "addon conditions (lease health)", change: func(_ *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) {
			a.Status.Conditions = []metav1.Condition{{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionFalse}}
		}},
		{name: "image registries annotation", wantRender: true, change: func(c *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn) {
			c.Annotations = map[string]string{clusterv1.ClusterImageRegistriesAnnotationKey: `{"registries":[{"mirror":"mirror.example.com/agent","source":"quay.io/agent"}]}`}
		}},
		{name: "cluster label", wantRender: true, change: func(c *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn) {
			c.Labels = map[string]string{"env": "prod"}
		}},
		{name: "Kubernetes version", wantRender: true, change: func(c *clusterv1.ManagedCluster, _ *addonv1alpha1.ManagedClusterAddOn) {
			c.Status.Version.Kubernetes = "v1.35.0"
		}},
		{name: "install namespace", wantRender: true, change: func(_ *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) {
			a.Spec.InstallNamespace = "agents"
		}},
		{name: "addon annotation (hosted mode)", wantRender: true, change: func(_ *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) {
			a.Annotations = map[string]string{"addon.open-cluster-management.io/hosting-cluster-name": "hosting"}
		}},
		{name: "AddOnDeploymentConfig spec hash", wantRender: true, change: withConfig("h2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered := &countingAddon{}
			cache := NewRenderCache(rendered)
			cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", ResourceVersion: "1"}}
			addon := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull", Namespace: "cluster1"}}
			withConfig("h1")(cluster, addon)

			if _, err := cache.Manifests(cluster, addon); err != nil {
				t.Fatalf("first Manifests: %v", err)
			}
			tt.change(cluster, addon)
			if _, err := cache.Manifests(cluster, addon); err != nil {
				t.Fatalf("second Manifests: %v", err)
			}
			want := 1
			if tt.wantRender {
				want = 2
			}
			if rendered.renders != want {
				t.Errorf("chart rendered %d times, want %d", rendered.renders, want)
			}
		})
	}
}

func TestRenderCacheKeepsClustersApartAndReturnsCopies(t *testing.T) {
	rendered := &countingAddon{}
	cache := NewRenderCache(rendered)
	addon := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull", UID: "enabled"}}
	cluster1 := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	cluster2 := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster2"}}

	first, err := cache.Manifests(cluster1, addon)
	if err != nil {
		t.Fatal(err)
	}
	// The framework may change what it gets; the next caller must not see that.
	first[0].(*corev1.ConfigMap).Data["cluster"] = "changed by a caller"
	again, err := cache.Manifests(cluster1, addon)
	if err != nil {
		t.Fatal(err)
	}
	if got := again[0].(*corev1.ConfigMap).Data["cluster"]; got != "cluster1" {
		t.Errorf("cached rendering of cluster1 says %q, want cluster1", got)
	}
	other, err := cache.Manifests(cluster2, addon)
	if err != nil {
		t.Fatal(err)
	}
	if got := other[0].(*corev1.ConfigMap).Data["cluster"]; got != "cluster2" {
		t.Errorf("rendering of cluster2 says %q, want cluster2", got)
	}
	if rendered.renders != 2 {
		t.Errorf("chart rendered %d times for two clusters asked three times, want 2", rendered.renders)
	}

	cache.Forget("cluster1", addon.UID)
	if cache.Cached("cluster1") {
		t.Errorf("cluster1's rendering is kept after Forget")
	}
	// A late sync of the deleted addon, from a lister that has not seen the deletion.
	if _, err := cache.Manifests(cluster1, addon); err != nil {
		t.Fatal(err)
	}
	if rendered.renders != 3 {
		t.Errorf("chart rendered %d times after Forget, want 3", rendered.renders)
	}
	if cache.Cached("cluster1") {
		t.Errorf("a rendering for the deleted addon is kept after Forget")
	}
	// The addon enabled again: a new ManagedClusterAddOn, whose rendering is kept.
	again1 := addon.DeepCopy()
	again1.UID = "enabled-again"
	if _, err := cache.Manifests(cluster1, again1); err != nil {
		t.Fatal(err)
	}
	if !cache.Cached("cluster1") {
		t.Errorf("the re-enabled addon's rendering is not kept")
	}
}

func TestRenderCacheDoesNotKeepFailures(t *testing.T) {
	rendered := &countingAddon{fail: errors.New("AddOnDeploymentConfig hub/argocd-pull: bad logLevel")}
	cache := NewRenderCache(rendered)
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}
	addon := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull"}}

	if _, err := cache.Manifests(cluster, addon); err == nil {
		t.Fatal("Manifests succeeded on a failing rendering")
	}
	// The config is fixed in place (same inputs): the next sync must render again.
	rendered.fail = nil
	objects, err := cache.Manifests(cluster, addon)
	if err != nil {
		t.Fatalf("Manifests after the fix: %v", err)
	}
	if len(objects) != 1 || rendered.renders != 1 {
		t.Errorf("got %d objects after %d renderings, want 1 and 1", len(objects), rendered.renders)
	}
}

// BenchmarkAgentManifests measures one call of Manifests with the real agent chart, as
// addon-framework makes it on every sync of a cluster's addon (and on its 10-minute
// resync of every addon): rendering the chart, and the cache's answer when nothing the
// rendering reads changed.
//
//	go test ./pkg/addon/ -run '^$' -bench AgentManifests -benchmem
func BenchmarkAgentManifests(b *testing.B) {
	cached, err := NewAgentAddon(kubefake.NewClientset(), addonfake.NewSimpleClientset(), NewOptions())
	if err != nil {
		b.Fatal(err)
	}
	cluster := testCluster(nil)
	addon := testAddon("", nil)
	for _, bc := range []struct {
		name       string
		agentAddon agent.AgentAddon
	}{
		{name: "render", agentAddon: cached.AgentAddon},
		{name: "cached", agentAddon: cached},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				objects, err := bc.agentAddon.Manifests(cluster, addon)
				if err != nil || len(objects) == 0 {
					b.Fatalf("Manifests: %d objects, %v", len(objects), err)
				}
			}
		})
	}
}
