package pullmodel

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

func TestSourceHubApplication(t *testing.T) {
	shop := appsv1alpha1.ApplicationReportSource{HubApplicationNamespace: "team-a", HubApplicationName: "shop"}
	want := types.NamespacedName{Namespace: "team-a", Name: "shop"}
	tests := map[string]struct {
		obj    client.Object
		want   types.NamespacedName
		wantOK bool
	}{
		"a report":                         {obj: &appsv1alpha1.ApplicationStatusReport{Source: shop}, want: want, wantOK: true},
		"a resource tree":                  {obj: &appsv1alpha1.ApplicationResourceTree{Source: shop}, want: want, wantOK: true},
		"a tree naming no hub Application": {obj: &appsv1alpha1.ApplicationResourceTree{}},
		"a source without its namespace": {obj: &appsv1alpha1.ApplicationStatusReport{
			Source: appsv1alpha1.ApplicationReportSource{HubApplicationName: "shop"}}},
		"another kind": {obj: &corev1.ConfigMap{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := SourceHubApplication(tc.obj)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Fatalf("SourceHubApplication = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
			requests := MapSourceToHubApplication(t.Context(), tc.obj)
			index := IndexSourceHubApplication(tc.obj)
			if !tc.wantOK {
				if len(requests) != 0 || len(index) != 0 {
					t.Errorf("maps to %v and indexes as %v, want neither", requests, index)
				}
				return
			}
			if len(requests) != 1 || requests[0].NamespacedName != tc.want {
				t.Errorf("maps to %v, want one request for %s", requests, tc.want)
			}
			if len(index) != 1 || index[0] != tc.want.String() {
				t.Errorf("indexes as %v, want [%s]", index, tc.want)
			}
		})
	}
}
