package report

import (
	"fmt"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/google/go-cmp/cmp"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// node is a tree node with uid "uid-<kind>-<name>", of version v1, under parent (nil: none).
func node(group, kind, namespace, name string, h *argov1alpha1.HealthStatus, parent *argov1alpha1.ResourceNode) argov1alpha1.ResourceNode {
	n := argov1alpha1.ResourceNode{
		ResourceRef: argov1alpha1.ResourceRef{Group: group, Version: "v1", Kind: kind, Namespace: namespace, Name: name, UID: "uid-" + kind + "-" + name},
		Health:      h,
	}
	if parent != nil {
		n.ParentRefs = []argov1alpha1.ResourceRef{parent.ResourceRef}
	}
	return n
}

// degradedDeployment is what Argo CD computes for a Deployment past its progress deadline.
const degradedDeployment = `Deployment "web" exceeded its progress deadline`

func TestFromApplicationWithTree(t *testing.T) {
	deploy := node("apps", "Deployment", "ns", "web", healthOf(health.HealthStatusDegraded, degradedDeployment), nil)
	rs := node("apps", "ReplicaSet", "ns", "web-5d4f", healthOf(health.HealthStatusProgressing, "Waiting for rollout to finish: 0 of 1 updated replicas are available..."), &deploy)
	pod := node("", "Pod", "ns", "web-5d4f-x1", healthOf(health.HealthStatusDegraded, "Back-off pulling image"), &rs)
	svc := node("", "Service", "ns", "web", healthOf(health.HealthStatusHealthy, ""), nil)
	endpoints := node("", "Endpoints", "ns", "web", nil, &svc)
	healthyRS := node("apps", "ReplicaSet", "ns", "web-old", healthOf(health.HealthStatusHealthy, ""), &deploy)

	v3App := func() *builders.ApplicationBuilder {
		return builders.Application("v3").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Health(health.HealthStatusDegraded, "").
			ResourceHealthSource(argov1alpha1.ResourceHealthLocationAppTree).
			Resource(resource("apps", "Deployment", "ns", "web", argov1alpha1.SyncStatusCodeSynced, nil)).
			Resource(resource("", "Service", "ns", "web", argov1alpha1.SyncStatusCodeSynced, nil))
	}
	base := appsv1alpha1.ApplicationReportStatus{
		Sync:   appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced, Revision: "abc"},
		Health: appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded},
	}
	with := func(f func(*appsv1alpha1.ApplicationReportStatus)) appsv1alpha1.ApplicationReportStatus {
		out := base
		f(&out)
		return out
	}
	noHealth := []appsv1alpha1.ResourceStatusReport{
		{Version: "v1", Kind: "Service", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced},
	}
	tests := map[string]struct {
		app  *argov1alpha1.Application
		tree *argov1alpha1.ApplicationTree
		want appsv1alpha1.ApplicationReportStatus
	}{
		"health in the tree, tree read: each resource's health from its node, children not healthy listed worst first": {
			app:  v3App().Build(),
			tree: &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{svc, rs, deploy, endpoints, pod, healthyRS}},
			want: with(func(s *appsv1alpha1.ApplicationReportStatus) {
				s.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceRedisTree
				s.Resources = []appsv1alpha1.ResourceStatusReport{
					{Version: "v1", Kind: "Service", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced,
						Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusHealthy}},
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced,
						Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: degradedDeployment}},
				}
				s.ResourceTree = &appsv1alpha1.ResourceTreeReport{
					Children: 4,
					NotHealthy: []appsv1alpha1.ChildResourceReport{
						{Version: "v1", Kind: "Pod", Namespace: "ns", Name: "web-5d4f-x1", Parent: "Deployment/web",
							Health: appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "Back-off pulling image"}},
						{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "ns", Name: "web-5d4f", Parent: "Deployment/web",
							Health: appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusProgressing,
								Message: "Waiting for rollout to finish: 0 of 1 updated replicas are available..."}},
					},
				}
			}),
		},
		"health in the tree, tree not read: no per-resource health, source appTree": {
			app: v3App().Build(),
			want: with(func(s *appsv1alpha1.ApplicationReportStatus) {
				s.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceAppTree
				s.Resources = noHealth
			}),
		},
		"health in the tree, tree read but empty (not computed yet): no health invented, no children": {
			app:  v3App().Build(),
			tree: &argov1alpha1.ApplicationTree{},
			want: with(func(s *appsv1alpha1.ApplicationReportStatus) {
				s.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceRedisTree
				s.Resources = noHealth
			}),
		},
		"health persisted in the Application: the Application's health, the tree ignored": {
			app: builders.Application("v2").Sync(argov1alpha1.SyncStatusCodeSynced, "abc").Health(health.HealthStatusDegraded, "").
				Resource(resource("apps", "Deployment", "ns", "web", argov1alpha1.SyncStatusCodeSynced, healthOf(health.HealthStatusDegraded, "in the app"))).Build(),
			tree: &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{deploy, pod}},
			want: with(func(s *appsv1alpha1.ApplicationReportStatus) {
				s.Resources = []appsv1alpha1.ResourceStatusReport{
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web", Status: appsv1alpha1.SyncStatusSynced,
						Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "in the app"}},
				}
			}),
		},
		"a child whose parent is not in the tree: listed without a parent": {
			app: v3App().Build(),
			tree: &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
				node("", "Pod", "ns", "stray", healthOf(health.HealthStatusMissing, ""), &argov1alpha1.ResourceNode{
					ResourceRef: argov1alpha1.ResourceRef{Kind: "ReplicaSet", Namespace: "ns", Name: "gone", UID: "uid-gone"}}),
			}},
			want: with(func(s *appsv1alpha1.ApplicationReportStatus) {
				s.ResourceHealthSource = appsv1alpha1.ResourceHealthSourceRedisTree
				s.Resources = noHealth
				s.ResourceTree = &appsv1alpha1.ResourceTreeReport{Children: 1, NotHealthy: []appsv1alpha1.ChildResourceReport{
					{Version: "v1", Kind: "Pod", Namespace: "ns", Name: "stray", Health: appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusMissing}},
				}}
			}),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromApplication(tt.app, tt.tree)); diff != "" {
				t.Errorf("FromApplication() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceTreeTruncation(t *testing.T) {
	deploy := node("apps", "Deployment", "ns", "web", healthOf(health.HealthStatusProgressing, ""), nil)
	long := strings.Repeat("x", appsv1alpha1.MaxResourceMessageLength+1)
	app := builders.Application("big").ResourceHealthSource(argov1alpha1.ResourceHealthLocationAppTree).
		Resource(resource("apps", "Deployment", "ns", "web", argov1alpha1.SyncStatusCodeSynced, nil)).Build()
	tests := map[string]struct {
		progressing, degraded, healthy int
		message                        string
		wantListed, wantOmitted        int
		wantShortened                  int
		wantDegradedListed             int
	}{
		"within the bound: every not-healthy child listed": {
			progressing: 3, degraded: 2, healthy: 5, wantListed: 5, wantDegradedListed: 2,
		},
		"over the bound: degraded kept before progressing, the rest counted": {
			progressing: appsv1alpha1.MaxNotHealthyChildren, degraded: 7, healthy: 10,
			wantListed: appsv1alpha1.MaxNotHealthyChildren, wantOmitted: 7, wantDegradedListed: 7,
		},
		"long messages of kept children shortened and counted; of left-out ones not": {
			progressing: appsv1alpha1.MaxNotHealthyChildren + 3, message: long,
			wantListed: appsv1alpha1.MaxNotHealthyChildren, wantOmitted: 3, wantShortened: appsv1alpha1.MaxNotHealthyChildren,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{deploy}}
			add := func(n int, status health.HealthStatusCode, prefix string) {
				for i := range n {
					tree.Nodes = append(tree.Nodes, node("", "Pod", "ns", fmt.Sprintf("%s-%03d", prefix, i), healthOf(status, tt.message), &deploy))
				}
			}
			add(tt.progressing, health.HealthStatusProgressing, "progressing")
			add(tt.degraded, health.HealthStatusDegraded, "degraded")
			add(tt.healthy, health.HealthStatusHealthy, "healthy")

			st := FromApplication(app, tree)
			if st.ResourceTree == nil {
				t.Fatalf("no resource tree in the report")
			}
			if got, want := st.ResourceTree.Children, int32(tt.progressing+tt.degraded+tt.healthy); got != want {
				t.Errorf("children = %d, want %d (every child counted)", got, want)
			}
			if got := len(st.ResourceTree.NotHealthy); got != tt.wantListed {
				t.Errorf("listed %d not-healthy children, want %d", got, tt.wantListed)
			}
			degraded := 0
			for i, c := range st.ResourceTree.NotHealthy {
				if c.Health.Status == appsv1alpha1.HealthStatusDegraded {
					degraded++
					if i >= tt.degraded {
						t.Errorf("degraded child %s at %d, after a less severe one", c.Name, i)
					}
				}
				if c.Parent != "Deployment/web" {
					t.Errorf("child %s parent = %q, want Deployment/web", c.Name, c.Parent)
				}
				if n := len([]rune(c.Health.Message)); n > appsv1alpha1.MaxResourceMessageLength {
					t.Errorf("child %s message has %d characters, over the bound", c.Name, n)
				}
			}
			if degraded != tt.wantDegradedListed {
				t.Errorf("listed %d degraded children, want %d", degraded, tt.wantDegradedListed)
			}
			var omitted, shortened int32
			if tr := st.Truncation; tr != nil {
				omitted, shortened = tr.OmittedChildren, tr.ShortenedMessages
			}
			if omitted != int32(tt.wantOmitted) || shortened != int32(tt.wantShortened) {
				t.Errorf("truncation: omitted children %d, shortened %d; want %d, %d", omitted, shortened, tt.wantOmitted, tt.wantShortened)
			}
		})
	}
}
