package propagation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Event reasons on the hub Application, one per kind of problem.
const (
	ReasonInvalidPullLabel   = "InvalidPullLabel"
	ReasonInvalidApplication = "InvalidPullAnnotations"
	ReasonClusterNotFound    = "ManagedClusterNotFound"
	ReasonClusterDeleting    = "ManagedClusterDeleting"
	ReasonLocalCluster       = "LocalClusterNotATarget"
	// ReasonManifestWorkTooLarge: the ManifestWork would exceed OCM's size limit.
	ReasonManifestWorkTooLarge = "ManifestWorkTooLarge"
	// ReasonManifestWorkRefused: the hub's API server refused to create or update it.
	ReasonManifestWorkRefused = "ManifestWorkRefused"
)

// problem is why a live, pulled Application is not delivered as it is now: the hub
// condition that says so (pullmodel.PropagationConditionTypes), the Event reason, and a
// message saying what is wrong and how to fix it.
type problem struct {
	condition argov1alpha1.ApplicationConditionType
	reason    string
	message   string
}

func invalid(reason, format string, args ...any) *problem {
	return &problem{condition: pullmodel.ConditionInvalidSpec, reason: reason, message: fmt.Sprintf(format, args...)}
}

// checkInput applies every input rule to app, in the order a user fixes them: the pull
// label (not pulled: false and no problem; an invalid label is a problem, never an
// unmarking), validate, then the target ManagedCluster, which cluster reads (nil when it
// does not exist) once the annotation naming it is valid. Without a problem, target is
// that ManagedCluster, for the checks that follow.
func checkInput(ctx context.Context, app *argov1alpha1.Application,
	cluster func(ctx context.Context, name string) (*clusterv1.ManagedCluster, error)) (pulled bool, target *clusterv1.ManagedCluster, p *problem, err error) {
	marked, err := pullmodel.Marked(app)
	if err != nil {
		return true, nil, invalid(ReasonInvalidPullLabel, "%s", err), nil
	}
	if !marked {
		return false, nil, nil, nil
	}
	if err := validate(app); err != nil {
		// validate joins one error per line; a condition reads better on one.
		return true, nil, invalid(ReasonInvalidApplication, "%s", strings.ReplaceAll(err.Error(), "\n", "; ")), nil
	}
	target, err = cluster(ctx, pullmodel.TargetCluster(app))
	if err != nil {
		return true, nil, nil, err
	}
	if p := checkTarget(app, target); p != nil {
		return true, nil, p, nil
	}
	return true, target, nil, nil
}

// asProblem is a tenancy check's verdict, as the tenancy package returns it, as a problem.
func asProblem(refused *tenancy.Refusal, err error) (*problem, error) {
	if refused == nil || err != nil {
		return nil, err
	}
	return &problem{condition: refused.Condition(), reason: refused.Reason, message: refused.Message}, nil
}

// checkTarget requires app's target ManagedCluster (cluster, nil when it does not exist)
// to exist, not to be being deleted and not to be the hub's local cluster.
func checkTarget(app *argov1alpha1.Application, cluster *clusterv1.ManagedCluster) *problem {
	name := pullmodel.TargetCluster(app)
	switch {
	case cluster == nil:
		return invalid(ReasonClusterNotFound,
			"ManagedCluster %q named by annotation %s does not exist: register the cluster or fix the annotation", name, apps.AnnotationOCMManagedCluster)
	case !cluster.DeletionTimestamp.IsZero():
		return invalid(ReasonClusterDeleting,
			"ManagedCluster %q named by annotation %s is being deleted: target another cluster", name, apps.AnnotationOCMManagedCluster)
	case cluster.Labels[LabelLocalCluster] == "true":
		return invalid(ReasonLocalCluster,
			"ManagedCluster %q is the hub itself (label %s=true) and is not a pull-model target: let the hub's Argo CD deploy it (remove label %s) or target another cluster", name, LabelLocalCluster, apps.LabelPullToOCMManagedCluster)
	}
	return nil
}

// checkSize refuses a ManifestWork that OCM's webhook would refuse for its size: checked
// before sending, it is reported on the Application rather than refused by the webhook.
func checkSize(w *workv1.ManifestWork) *problem {
	size := pullmodel.ManifestsSize(w.Spec.Workload.Manifests)
	if size <= pullmodel.ManifestsLimit {
		return nil
	}
	return &problem{condition: pullmodel.ConditionDeliveryError, reason: ReasonManifestWorkTooLarge, message: fmt.Sprintf(
		"the ManifestWork %s would carry %d bytes of manifests, over OCM's ManifestWork limit of %d bytes: make the Application smaller (spec.info, annotations, inline Helm values or manifests; move large values into the source repository)",
		klog.KObj(w), size, pullmodel.ManifestsLimit)}
}

// refusal turns a write of w the API server refused into a problem: the namespace is
// terminating, the object is invalid, an admission webhook or policy denied it. Retrying
// the same write cannot help; it is the user's or an admin's to fix. Any other error
// (conflict, timeout, unavailable) is transient and gives nil.
func refusal(w *workv1.ManifestWork, err error) *problem {
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) &&
		!apierrors.IsRequestEntityTooLargeError(err) {
		return nil
	}
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	return &problem{condition: pullmodel.ConditionDeliveryError, reason: ReasonManifestWorkRefused, message: fmt.Sprintf(
		"the hub refused the ManifestWork %s: %s: fix what it names (or ask the hub's admin); the manager tries again when the Application or its ManifestWork changes",
		klog.KObj(w), msg)}
}

// heldMessage is p's message for the Application, saying what stays delivered meanwhile.
func heldMessage(p *problem, kept []workv1.ManifestWork) string {
	if len(kept) == 0 {
		return p.message
	}
	names := make([]string, 0, len(kept))
	for i := range kept {
		names = append(names, klog.KObj(&kept[i]).String())
	}
	return fmt.Sprintf("%s. The ManifestWork %s delivered before is kept unchanged until then", p.message, strings.Join(names, ", "))
}
