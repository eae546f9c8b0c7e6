package resourcetree

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

func TestPullingChanged(t *testing.T) {
	// A fresh builder each time: a builder's methods change it.
	pulled := func() *builders.ApplicationBuilder { return builders.Application("guestbook").Pulled().Cluster("c1") }
	tests := map[string]struct {
		oldApp, newApp *argov1alpha1.Application
		want           bool
	}{
		"status only":    {oldApp: pulled().Build(), newApp: pulled().Health("Degraded", "").Build()},
		"unmarked":       {oldApp: pulled().Build(), newApp: pulled().Label(apps.LabelPullToOCMManagedCluster, "false").Build(), want: true},
		"invalid label":  {oldApp: pulled().Build(), newApp: pulled().Label(apps.LabelPullToOCMManagedCluster, "yes").Build(), want: true},
		"retargeted":     {oldApp: pulled().Build(), newApp: pulled().Cluster("c2").Build(), want: true},
		"marked again":   {oldApp: pulled().WithoutLabel(apps.LabelPullToOCMManagedCluster).Build(), newApp: pulled().Build(), want: true},
		"another source": {oldApp: pulled().Build(), newApp: pulled().Revisions("v2").Build()},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := pullingChanged().Update(event.UpdateEvent{ObjectOld: tt.oldApp, ObjectNew: tt.newApp}); got != tt.want {
				t.Errorf("pullingChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTreeChanged(t *testing.T) {
	tree := func(digest, hubName string, nodes int32) *appsv1alpha1.ApplicationResourceTree {
		return &appsv1alpha1.ApplicationResourceTree{
			Source: appsv1alpha1.ApplicationReportSource{Cluster: "c1", Namespace: "argocd", Name: hubName,
				HubApplicationNamespace: "argocd", HubApplicationName: hubName},
			Tree: appsv1alpha1.ResourceTreeData{Digest: digest, Nodes: nodes},
		}
	}
	tests := map[string]struct {
		oldTree, newTree *appsv1alpha1.ApplicationResourceTree
		want             bool
	}{
		"same digest, same source":  {oldTree: tree("a", "guestbook", 3), newTree: tree("a", "guestbook", 3)},
		"new digest":                {oldTree: tree("a", "guestbook", 3), newTree: tree("b", "guestbook", 3), want: true},
		"another hub Application":   {oldTree: tree("a", "guestbook", 3), newTree: tree("a", "shop", 3), want: true},
		"only what the digest says": {oldTree: tree("a", "guestbook", 3), newTree: tree("a", "guestbook", 4)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := treeChanged().Update(event.UpdateEvent{ObjectOld: tt.oldTree, ObjectNew: tt.newTree}); got != tt.want {
				t.Errorf("treeChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
