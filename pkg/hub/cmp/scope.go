package cmp

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scope says whether objects of a kind live in a namespace. The plugin cannot ask the
// managed cluster (it runs on the hub, before anything is delivered), so it knows the
// built-in Kubernetes kinds and learns custom kinds from CustomResourceDefinitions in the
// same payload; any other kind is left as written and the work agent reports a mistake.
type scope int

const (
	scopeUnknown scope = iota
	scopeNamespaced
	scopeCluster
)

// clusterScopedKinds are the built-in cluster-scoped kinds, by API group and kind.
var clusterScopedKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Node"}:                                                         true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "", Kind: "ComponentStatus"}:                                              true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "policy", Kind: "PodSecurityPolicy"}:                                      true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
}

// namespacedKinds are the built-in namespaced kinds a workload is made of.
var namespacedKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "ConfigMap"}:                            true,
	{Group: "", Kind: "Endpoints"}:                            true,
	{Group: "", Kind: "LimitRange"}:                           true,
	{Group: "", Kind: "PersistentVolumeClaim"}:                true,
	{Group: "", Kind: "Pod"}:                                  true,
	{Group: "", Kind: "ReplicationController"}:                true,
	{Group: "", Kind: "ResourceQuota"}:                        true,
	{Group: "", Kind: "Secret"}:                               true,
	{Group: "", Kind: "Service"}:                              true,
	{Group: "", Kind: "ServiceAccount"}:                       true,
	{Group: "apps", Kind: "Deployment"}:                       true,
	{Group: "apps", Kind: "StatefulSet"}:                      true,
	{Group: "apps", Kind: "DaemonSet"}:                        true,
	{Group: "apps", Kind: "ReplicaSet"}:                       true,
	{Group: "batch", Kind: "Job"}:                             true,
	{Group: "batch", Kind: "CronJob"}:                         true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:   true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:            true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:             true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:       true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true,
	{Group: "coordination.k8s.io", Kind: "Lease"}:             true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:        true,
	{Group: "events.k8s.io", Kind: "Event"}:                   true,
	{Group: "", Kind: "Event"}:                                true,
	{Group: "", Kind: "PodTemplate"}:                          true,
	{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}:     true,
}

// kindCatalog knows the scope and resource name of kinds: the built-in tables first, then
// the payload's own CustomResourceDefinitions.
type kindCatalog struct {
	scopes    map[schema.GroupKind]scope
	resources map[schema.GroupKind]string
}

var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// newKindCatalog learns every custom kind a CustomResourceDefinition in objs defines.
func newKindCatalog(objs []*unstructured.Unstructured) kindCatalog {
	c := kindCatalog{scopes: map[schema.GroupKind]scope{}, resources: map[schema.GroupKind]string{}}
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != crdKind {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		crdScope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		gk := schema.GroupKind{Group: group, Kind: kind}
		switch crdScope {
		case "Namespaced":
			c.scopes[gk] = scopeNamespaced
		case "Cluster":
			c.scopes[gk] = scopeCluster
		}
		if plural != "" {
			c.resources[gk] = plural
		}
	}
	return c
}

func (c kindCatalog) scope(gk schema.GroupKind) scope {
	switch {
	case clusterScopedKinds[gk]:
		return scopeCluster
	case namespacedKinds[gk]:
		return scopeNamespaced
	default:
		return c.scopes[gk]
	}
}

// resource is the resource (plural) name of gvk, which a ManifestWork's resource
// identifiers use: the CRD's plural, or Kubernetes' guess from the kind, which is right
// for every built-in kind.
func (c kindCatalog) resource(gvk schema.GroupVersionKind) string {
	if plural, ok := c.resources[gvk.GroupKind()]; ok {
		return plural
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}
