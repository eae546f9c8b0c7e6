package propagation

import (
	"context"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestClusterTargetability(t *testing.T) {
	cluster := func(mutate func(*clusterv1.ManagedCluster)) *clusterv1.ManagedCluster {
		c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "dev"}}}
		mutate(c)
		return c
	}
	plain := cluster(func(*clusterv1.ManagedCluster) {})
	p := clusterTargetability()
	tests := map[string]struct {
		got, want bool
	}{
		"create": {got: p.Create(event.CreateEvent{Object: plain}), want: true},
		"delete": {got: p.Delete(event.DeleteEvent{Object: plain}), want: true},
		"deletion started": {got: p.Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: cluster(func(c *clusterv1.ManagedCluster) {
			c.DeletionTimestamp = &metav1.Time{}
		})}), want: true},
		"became local": {got: p.Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: cluster(func(c *clusterv1.ManagedCluster) {
			c.Labels[LabelLocalCluster] = "true"
		})}), want: true},
		"status heartbeat": {got: p.Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: cluster(func(c *clusterv1.ManagedCluster) {
			c.Status.Version.Kubernetes = "v1.34.3"
		})})},
		"nil objects": {got: p.Update(event.UpdateEvent{})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestWorkToApp(t *testing.T) {
	work := func(annotations map[string]string) client.Object {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "c1", Annotations: annotations}}
	}
	tests := map[string]struct {
		obj  client.Object
		want []reconcile.Request
	}{
		"annotated": {
			obj:  work(map[string]string{apps.AnnotationHubApplicationNamespace: "argocd", apps.AnnotationHubApplicationName: "a"}),
			want: []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "argocd", Name: "a"}}},
		},
		"no name":        {obj: work(map[string]string{apps.AnnotationHubApplicationNamespace: "argocd"})},
		"no annotations": {obj: work(nil)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := workToApp(context.Background(), tc.obj)
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("workToApp() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestIndexAppByClusterFollowsTheTargetRule: the index that brings a ManagedCluster's
// events to its Applications keys them by the cluster they are pulled to, the same
// (trimmed) name the ManifestWork's namespace comes from.
func TestIndexAppByClusterFollowsTheTargetRule(t *testing.T) {
	tests := map[string]struct {
		annotation string
		want       []string
	}{
		"a cluster":             {annotation: "cluster1", want: []string{"cluster1"}},
		"spaces around it":      {annotation: " cluster1 ", want: []string{"cluster1"}},
		"no cluster":            {annotation: "", want: nil},
		"only spaces, no index": {annotation: "  ", want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			app := stored(t, hubApplication("a").Cluster(tc.annotation).Build())
			got := indexAppByCluster(app)
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("index keys = %q, want %q", got, tc.want)
			}
			if w, err := BuildManifestWork(app, requests.Carried{}); err == nil && len(got) == 1 && w.Namespace != got[0] {
				t.Errorf("index key %q is not the ManifestWork's namespace %q", got[0], w.Namespace)
			}
		})
	}
}
