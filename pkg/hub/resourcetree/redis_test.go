package resourcetree

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestStoreWithoutTheSecret: no argocd-redis Secret means a Redis without a password (an
// Argo CD installed without auth), while a Secret that cannot be read is an error: the
// manager must not connect without the password it was told to use.
func TestStoreWithoutTheSecret(t *testing.T) {
	key := types.NamespacedName{Namespace: "argocd", Name: "argocd-redis"}
	missing := &store{secrets: fake.NewClientBuilder().Build(), secret: key, address: "127.0.0.1:1", compression: "gzip"}
	if _, err := missing.client(context.Background()); err != nil {
		t.Errorf("no Secret: %v, want a client without a password", err)
	}
	missing.reset()

	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
	refused := &store{secret: key, address: "127.0.0.1:1", compression: "gzip",
		secrets: fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return forbidden
			},
		}).Build()}
	if _, err := refused.client(context.Background()); !apierrors.IsForbidden(err) {
		t.Errorf("a Secret that cannot be read: %v, want the Forbidden error", err)
	}
}
