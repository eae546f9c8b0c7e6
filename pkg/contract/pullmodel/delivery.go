package pullmodel

import (
	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// DeliveredApplication is the namespace and name the Application has on its cluster, as
// the ManifestWork delivers it: from the Application's manifest config (propagation
// writes one with the feedback rules), else from the work agent's status of the
// Application manifest. The namespace is the hub Application's unless the
// apps.AnnotationOCMManagedClusterAppNamespace annotation overrode it; the work, not
// that rule, says where it went.
func DeliveredApplication(mw *workv1.ManifestWork) (types.NamespacedName, bool) {
	if mw == nil {
		return types.NamespacedName{}, false
	}
	for _, mc := range mw.Spec.ManifestConfigs {
		id := mc.ResourceIdentifier
		if id.Group == argoapp.Group && id.Resource == argoapp.ApplicationPlural && id.Name != "" {
			return types.NamespacedName{Namespace: id.Namespace, Name: id.Name}, true
		}
	}
	if m := applicationManifest(mw); m != nil && m.ResourceMeta.Name != "" {
		return types.NamespacedName{Namespace: m.ResourceMeta.Namespace, Name: m.ResourceMeta.Name}, true
	}
	return types.NamespacedName{}, false
}

// ApplicationManifestConditions are the conditions the work agent reports for the Argo
// CD Application manifest of mw (Applied, Available, ...); nil before its first status.
func ApplicationManifestConditions(mw *workv1.ManifestWork) []metav1.Condition {
	if m := applicationManifest(mw); m != nil {
		return m.Conditions
	}
	return nil
}

// applicationManifest is the work agent's status of the Application manifest of mw.
func applicationManifest(mw *workv1.ManifestWork) *workv1.ManifestCondition {
	if mw == nil {
		return nil
	}
	for i := range mw.Status.ResourceStatus.Manifests {
		m := &mw.Status.ResourceStatus.Manifests[i]
		if isApplicationManifest(m.ResourceMeta) {
			return m
		}
	}
	return nil
}
