package propagation

import (
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
)

// storedApplication is one hub Application as a reconcile sees it: as stored, which the
// payload is built from so that every field the user wrote reaches the cluster (fields
// of Argo CD 3 that this module's v2 types would drop, such as syncPolicy.automated.enabled,
// included); its typed view, decoded from that same object, for every decision; and the
// requests the payload carries (settleRequests).
type storedApplication struct {
	stored   *unstructured.Unstructured
	typed    *argov1alpha1.Application
	requests requests.Carried
}

// newApplicationObject is an empty unstructured Application, to read into.
func newApplicationObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	return u
}

// getApplication reads the hub Application key from the manager's cache as stored.
func (r *reconciler) getApplication(ctx context.Context, key types.NamespacedName) (*storedApplication, error) {
	u := newApplicationObject()
	if err := r.cache.Get(ctx, key, u); err != nil {
		return nil, err
	}
	in := &storedApplication{}
	if err := in.set(u); err != nil {
		return nil, err
	}
	return in, nil
}

// set makes stored the Application in holds, with its typed view. The typed view is
// decoded through JSON, as from the API server: runtime's unstructured converter cannot
// fill Argo CD's types (ApplicationDestination has unexported fields).
func (in *storedApplication) set(stored *unstructured.Unstructured) error {
	raw, err := stored.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding Application %s/%s: %w", stored.GetNamespace(), stored.GetName(), err)
	}
	typed := &argov1alpha1.Application{}
	if err := json.Unmarshal(raw, typed); err != nil {
		return fmt.Errorf("decoding Application %s/%s: %w", stored.GetNamespace(), stored.GetName(), err)
	}
	in.stored, in.typed = stored, typed
	return nil
}
