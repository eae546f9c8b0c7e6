package requests

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

// hubApplication is a pulled hub Application in one version of one incarnation, which
// request ids are minted from.
func hubApplication(name string) *builders.ApplicationBuilder {
	return builders.Application(name).Pulled().UID("7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e").ResourceVersion("42")
}

// stored is app as the API server stores it, which the hub decides on (its kind does not
// matter here).
func stored(t *testing.T, app *argov1alpha1.Application) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(app)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}
