package manager

import (
	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
)

// stripManagedFields is controller-runtime's transform that drops managed fields.
var stripManagedFields = cache.TransformStripManagedFields()

// trimCached is the manager cache's transform of every object.
func trimCached(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return nil, err
	}
	return trimStoredApplication(obj)
}

// trimCachedTree is the manager cache's transform of ApplicationResourceTrees: of each it
// keeps all but the tree itself (tree.compressed, up to 384 KiB each), which the
// resourcetree controller reads with an uncached GET when the digest changed.
func trimCachedTree(obj any) (any, error) {
	obj, err := trimCached(obj)
	if err != nil {
		return nil, err
	}
	if tree, ok := obj.(*appsv1alpha1.ApplicationResourceTree); ok {
		tree.Tree.Compressed = nil
	}
	return obj, nil
}

var applicationGVK = argov1alpha1.SchemeGroupVersion.WithKind(argoapp.ApplicationKind)

// trimStoredApplication is a cache transform: of a hub Application the manager caches as
// stored (unstructured, for the propagation controller alone: the payload is built from
// it) it keeps what that controller reads, metadata, spec and .operation, and of the status
// only the conditions it writes and what the run-once request protocol reads
// (requests.CachedStatus). The rest of the status (resources, sync and health with their
// comparison, summary, history, the sync result with every resource) is what the
// application status controller mirrors from the cluster; the typed cache it reads holds
// it, and a second copy here would cost the manager about as much memory as all the other
// hub objects together (docs/benchmarks.md, "The cost of a change").
// Objects of other kinds, and typed Applications, pass unchanged.
func trimStoredApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != applicationGVK {
		return obj, nil
	}
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return obj, nil
	}
	kept := requests.CachedStatus(u.Object)
	if conditions, ok := status["conditions"]; ok {
		kept["conditions"] = conditions
	}
	if len(kept) == 0 {
		delete(u.Object, "status")
	} else {
		u.Object["status"] = kept
	}
	return u, nil
}
