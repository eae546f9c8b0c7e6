package propagation

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// TestStoredApplicationTypedView: the typed view decisions are made on is decoded from the
// stored object, fields the types do not know ignored.
func TestStoredApplicationTypedView(t *testing.T) {
	want := hubApplication("a").Cluster("c1").Finalizer(pullmodel.ResourcesFinalizer).
		Operation(argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}}).Build()
	in := &storedApplication{}
	if err := in.set(stored(t, want)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, in.typed, cmpopts.IgnoreUnexported(argov1alpha1.ApplicationDestination{}),
		cmpopts.IgnoreFields(argov1alpha1.Application{}, "TypeMeta")); diff != "" {
		t.Errorf("typed view (-want +got):\n%s", diff)
	}

	v3 := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(argoCD3Application), &v3.Object); err != nil {
		t.Fatal(err)
	}
	if err := in.set(v3); err != nil {
		t.Fatalf("an Argo CD 3 Application: %v", err)
	}
	if in.stored != v3 || in.typed.Spec.Destination.Name != "in-cluster" || in.typed.Spec.SyncPolicy.Automated == nil {
		t.Errorf("typed view of an Argo CD 3 Application: %+v", in.typed.Spec)
	}
}
