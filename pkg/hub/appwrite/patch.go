// Package appwrite is how the hub controllers write a hub Application.
package appwrite

import (
	"context"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/ownwrites"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writes remembers a controller's own last write of each hub Application (see
// ownwrites.Tracker).
type Writes = ownwrites.Tracker[*argov1alpha1.Application]

// PatchApplication is how the hub controllers write a hub Application: mutate changes a
// copy of it and says whether it changed anything; only then is it written, as a merge
// patch of the changed fields carrying the read resourceVersion (optimistic lock). The
// Application CRD has no status subresource, and unlike an Update of the typed object the
// patch holds only the changed fields, so fields of a newer Application CRD that this
// module's types do not know are never dropped. On a conflict the Application is read
// again through reader (the API server) and mutate runs on that, never on the stale object.
// With writes (may be nil), a controller that writes the same Application again before
// the cache has seen its last write builds on that write instead of on the cache
// (Writes), which spares the API server the conflict and the re-read.
//
// It returns the Application as it was before the write that succeeded and as written,
// both nil when nothing was written (mutate changed nothing, or the Application is gone).
func PatchApplication(ctx context.Context, c client.Client, reader client.Reader, writes *Writes,
	cached *argov1alpha1.Application, mutate func(app *argov1alpha1.Application) bool) (before, written *argov1alpha1.Application, err error) {
	key := client.ObjectKeyFromObject(cached)
	attempt := 0
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		before, written = nil, nil
		app := cached
		if attempt == 0 {
			app = writes.Current(cached)
		}
		if attempt > 0 {
			app = &argov1alpha1.Application{}
			if err := reader.Get(ctx, key, app); err != nil {
				return err
			}
		}
		attempt++
		updated := app.DeepCopy()
		if !mutate(updated) {
			return nil
		}
		if err := c.Patch(ctx, updated, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{})); err != nil {
			writes.Forget(key)
			return err
		}
		writes.Wrote(app.ResourceVersion, updated)
		before, written = app, updated
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	return before, written, err
}
