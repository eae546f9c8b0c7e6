package reports

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestDesiredTreeIsNamedLabelledAndOwnedLikeTheReport(t *testing.T) {
	app := builders.Application("guestbook-c1").UID("uid-1").PulledFrom("hub-apps", "guestbook-c1").
		HostingApplicationSet("appsets/guestbook").Build()
	data := appsv1alpha1.ResourceTreeData{Digest: "d1", Nodes: 3}
	tree, rep := desiredTree(app, data, "c1", testOwner), desiredReport(app, nil, "c1", testOwner)
	if tree.Name != rep.Name || tree.Namespace != rep.Namespace {
		t.Errorf("tree %s/%s, report %s/%s", tree.Namespace, tree.Name, rep.Namespace, rep.Name)
	}
	if diff := cmp.Diff(rep.Source, tree.Source); diff != "" {
		t.Errorf("source (-report +tree):\n%s", diff)
	}
	if diff := cmp.Diff(rep.Labels, tree.Labels); diff != "" {
		t.Errorf("labels (-report +tree):\n%s", diff)
	}
	if diff := cmp.Diff(rep.OwnerReferences, tree.OwnerReferences); diff != "" {
		t.Errorf("owners (-report +tree):\n%s", diff)
	}
	if diff := cmp.Diff(data, tree.Tree); diff != "" {
		t.Errorf("tree data (-want +got):\n%s", diff)
	}
}

func TestSameTree(t *testing.T) {
	app := builders.Application("guestbook").UID("uid-1").PulledFrom("hub-apps", "guestbook").Build()
	desired := desiredTree(app, appsv1alpha1.ResourceTreeData{Digest: "d1", Nodes: 3, OmittedNodes: 1,
		ObservedAt: metav1.Unix(100, 0)}, "c1", testOwner)
	for name, tt := range map[string]struct {
		change func(current *appsv1alpha1.ApplicationResourceTree)
		want   bool
	}{
		"the same": {change: func(*appsv1alpha1.ApplicationResourceTree) {}, want: true},
		"read at another time, the payload left out": {change: func(c *appsv1alpha1.ApplicationResourceTree) {
			c.Tree.ObservedAt = metav1.Unix(200, 0)
			c.Tree.Compressed = nil
		}, want: true},
		"a label someone else added":                {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.Labels["team"] = "a" }, want: true},
		"another digest":                            {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.Tree.Digest = "d2" }, want: false},
		"other counts":                              {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.Tree.OmittedNodes = 0 }, want: false},
		"another owner":                             {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.OwnerReferences[0].UID = "other" }, want: false},
		"the agent's label gone":                    {change: func(c *appsv1alpha1.ApplicationResourceTree) { delete(c.Labels, apps.LabelReportManagedBy) }, want: false},
		"another source":                            {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.Source.UID = "uid-2" }, want: false},
		"an ApplicationSet label the agent dropped": {change: func(c *appsv1alpha1.ApplicationResourceTree) { c.Labels[apps.LabelReportApplicationSet] = "x" }, want: false},
	} {
		t.Run(name, func(t *testing.T) {
			current := desired.DeepCopy()
			tt.change(current)
			if got := sameTree(current, desired); got != tt.want {
				t.Errorf("sameTree = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDropTreePayload(t *testing.T) {
	tree := &appsv1alpha1.ApplicationResourceTree{Tree: appsv1alpha1.ResourceTreeData{Digest: "d1", Compressed: []byte("gzip")}}
	out, err := DropTreePayload(tree)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*appsv1alpha1.ApplicationResourceTree); got.Tree.Compressed != nil || got.Tree.Digest != "d1" {
		t.Errorf("tree data %+v, want the digest without the payload", got.Tree)
	}
	rep := &appsv1alpha1.ApplicationStatusReport{Source: appsv1alpha1.ApplicationReportSource{Name: "r"}}
	if out, _ := DropTreePayload(rep); out != rep || rep.Source.Name != "r" {
		t.Error("a report is not left as it is")
	}
}

func TestTreeRequestSkipsTheAgentsOwnWrite(t *testing.T) {
	app := builders.Application("guestbook").UID("uid-1").PulledFrom("hub-apps", "guestbook").Build()
	written := desiredTree(app, appsv1alpha1.ResourceTreeData{Digest: "d1"}, "c1", testOwner)
	written.ResourceVersion = "7"
	r := &TreeReconciler{applied: map[string]appliedTree{written.Name: {resourceVersion: "7", tree: written}}}
	if got := r.treeRequest(written); got != nil {
		t.Errorf("the agent's own write enqueues %v", got)
	}
	changed := written.DeepCopy()
	changed.ResourceVersion = "8"
	want := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "argocd", Name: "guestbook"}}}
	if diff := cmp.Diff(want, r.treeRequest(changed)); diff != "" {
		t.Errorf("a tree someone else changed (-want +got):\n%s", diff)
	}
	r.observeTree(written, true)
	if diff := cmp.Diff(want, r.treeRequest(written)); diff != "" {
		t.Errorf("a deleted tree (-want +got):\n%s", diff)
	}
}
