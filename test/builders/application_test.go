package builders

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

func TestBuildReturnsACopy(t *testing.T) {
	b := Application("a").Label("team", "x")
	first := b.Build()
	first.Labels["team"] = "changed"
	b.Label("second", "y")
	if got := b.Build().Labels; !cmp.Equal(got, map[string]string{"team": "x", "second": "y"}) {
		t.Errorf("labels %v: a built Application shares its maps with the builder", got)
	}
	if _, ok := first.Labels["second"]; ok {
		t.Error("a later call changed an Application built before it")
	}
}

func TestPullModelMetadata(t *testing.T) {
	hub := Application("guestbook").Pulled().Cluster("cluster1").OwnedBy("guestbook-set", "uid-1").Build()
	if diff := cmp.Diff(map[string]string{apps.LabelPullToOCMManagedCluster: "true"}, hub.Labels); diff != "" {
		t.Errorf("hub labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{apps.AnnotationSkipReconcile: "true", apps.AnnotationOCMManagedCluster: "cluster1"}, hub.Annotations); diff != "" {
		t.Errorf("hub annotations (-want +got):\n%s", diff)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "guestbook-set", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(wantOwner, hub.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}

	spoke := Application("guestbook").PulledFrom("hub-apps", "guestbook").HostingApplicationSet("hub-apps/guestbook-set").Build()
	if diff := cmp.Diff(map[string]string{
		apps.AnnotationHubApplicationNamespace: "hub-apps", apps.AnnotationHubApplicationName: "guestbook",
		apps.AnnotationHostingApplicationSet: "hub-apps/guestbook-set",
	}, spoke.Annotations); diff != "" {
		t.Errorf("managed cluster annotations (-want +got):\n%s", diff)
	}
}
