package propagation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
)

// Event reasons on the hub Application when the cluster acknowledged a request of the
// run-once request protocol (pkg/contract/requests) and the hub cleared it.
const (
	ReasonOperationDelivered = "OperationDelivered"
	ReasonRefreshDelivered   = "RefreshDelivered"
)

// settleRequests clears from the hub Application the requests the spoke acknowledged, as
// the protocol decides, then sets in.requests to what the payload carries. After a clear,
// in holds the Application the API server returned, so the rest of the reconcile builds
// from it.
func (r *reconciler) settleRequests(ctx context.Context, in *storedApplication, works []workv1.ManifestWork) error {
	work := pullmodel.CurrentWork(in.typed, works)
	d, err := r.requests.Decide(ctx, in.stored, work, r.now().Time)
	if err != nil {
		return err
	}
	if d.Application != in.stored {
		if err := in.set(d.Application); err != nil {
			return err
		}
	}
	if d.Clears() {
		// A request is carried only by an existing work: work is not nil here.
		if err := r.clearRequests(ctx, in, &d, work.Namespace); err != nil {
			return err
		}
	}
	in.requests, err = d.Next()
	return err
}

// clearRequests writes the clear d asks for to the hub Application in, records it, and
// says so in an Event per request.
func (r *reconciler) clearRequests(ctx context.Context, in *storedApplication, d *requests.Decision, cluster string) error {
	data, err := d.ClearPatch()
	if err != nil {
		return err
	}
	after := in.stored.DeepCopy()
	if err := r.client.Patch(ctx, after, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("clearing the delivered requests of Application %s/%s: %w", in.stored.GetNamespace(), in.stored.GetName(), err)
	}
	if err := r.requests.Cleared(d, after); err != nil {
		return err
	}
	if err := in.set(after); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if id := d.ClearOperation; id != "" {
		log.V(2).Info("Cleared the operation the cluster acknowledged", "request", id)
		r.recorder.Eventf(in.typed, corev1.EventTypeNormal, ReasonOperationDelivered,
			"Operation request %s was delivered to cluster %s and removed from the hub Application", id, cluster)
	}
	if id := d.ClearRefresh; id != "" {
		log.V(2).Info("Cleared the refresh the cluster acknowledged", "request", id)
		r.recorder.Eventf(in.typed, corev1.EventTypeNormal, ReasonRefreshDelivered,
			"Refresh request %s was delivered to cluster %s and removed from the hub Application", id, cluster)
	}
	return nil
}
