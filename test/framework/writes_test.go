package framework

import "testing"

func TestNamespacedObject(t *testing.T) {
	tests := map[string]struct {
		path string
		want writeKey
		ok   bool
	}{
		"a group resource":       {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook", want: writeKey{"argocd", "applications", "guestbook"}, ok: true},
		"its status":             {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook/status", want: writeKey{"argocd", "applications", "guestbook"}, ok: true},
		"a create of one":        {path: "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications", want: writeKey{"argocd", "applications", ""}, ok: true},
		"a core resource":        {path: "/api/v1/namespaces/argocd/secrets/cluster1-cluster-secret", want: writeKey{"argocd", "secrets", "cluster1-cluster-secret"}, ok: true},
		"a create of a core one": {path: "/api/v1/namespaces/argocd/secrets", want: writeKey{"argocd", "secrets", ""}, ok: true},
		"cluster-scoped":         {path: "/apis/cluster.open-cluster-management.io/v1/managedclusters/cluster1"},
		"a namespace itself":     {path: "/api/v1/namespaces/argocd"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := namespacedObject(tt.path)
			if got != tt.want || ok != tt.ok {
				t.Errorf("namespacedObject(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}
