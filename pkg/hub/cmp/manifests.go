package cmp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Manifest is one decoded object and where it came from, for error messages.
type Manifest struct {
	Object *unstructured.Unstructured
	// Origin is "<file> document <n>" or "<tool> output document <n>".
	Origin string
}

// decodeFile decodes the objects of one source file the way Argo CD's directory source
// does (reposerver/repository/repository.go getObjsFromYAMLOrJSON), so the plugin takes
// the files Argo CD would and ignores the ones it would:
//   - a .json file holds exactly one object; anything else is an error;
//   - a YAML file that does not decode is ignored when it does not look like a
//     Kubernetes object (it lacks one of "apiVersion:", "kind:", "metadata:"; a Helm
//     values file or a CI config), and an error otherwise or when an earlier document
//     of the same file decoded.
//
// An empty document is skipped, a List is expanded into its items.
func decodeFile(name string, data []byte) ([]Manifest, error) {
	if strings.HasSuffix(name, ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s is not JSON: %v", name, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s holds more than one object: a JSON file holds exactly one, use YAML documents for more", name)
		}
		obj, err := objectFromJSON(raw, name)
		if err != nil {
			return nil, err
		}
		return expandList(obj, name)
	}
	manifests, err := decodeStream(name, data)
	if err != nil && len(manifests) == 0 && !looksLikeKubernetesObject(data) {
		return nil, nil
	}
	return manifests, err
}

// decodeRendered decodes the output of kustomize or helm: every document must be an object.
func decodeRendered(tool string, data []byte) ([]Manifest, error) {
	return decodeStream(tool+" output", data)
}

// looksLikeKubernetesObject is Argo CD's test for a YAML file worth an error.
func looksLikeKubernetesObject(data []byte) bool {
	return bytes.Contains(data, []byte("apiVersion:")) &&
		bytes.Contains(data, []byte("kind:")) &&
		bytes.Contains(data, []byte("metadata:"))
}

// decodeStream decodes a YAML (or JSON) stream of objects. On error it returns the
// manifests decoded before it.
func decodeStream(name string, data []byte) ([]Manifest, error) {
	dec := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var manifests []Manifest
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return manifests, nil
			}
			return manifests, fmt.Errorf("%s document %d is not YAML: %v", name, doc, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		origin := fmt.Sprintf("%s document %d", name, doc)
		obj, err := objectFromJSON(raw, origin)
		if err != nil {
			return manifests, err
		}
		items, err := expandList(obj, origin)
		if err != nil {
			return manifests, err
		}
		manifests = append(manifests, items...)
	}
}

// objectFromJSON decodes one object, integers as int64 like the API machinery does.
func objectFromJSON(raw []byte, origin string) (*unstructured.Unstructured, error) {
	var content map[string]any
	if err := utiljson.Unmarshal(raw, &content); err != nil {
		return nil, fmt.Errorf("%s is not a Kubernetes object: %v", origin, err)
	}
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
		return nil, fmt.Errorf("%s is not a Kubernetes object: it needs apiVersion and kind", origin)
	}
	return obj, nil
}

// expandList returns obj, or the items of obj when it is a List (kind List or *List with items).
func expandList(obj *unstructured.Unstructured, origin string) ([]Manifest, error) {
	if !obj.IsList() {
		return []Manifest{{Object: obj, Origin: origin}}, nil
	}
	var items []Manifest
	err := obj.EachListItem(func(item runtime.Object) error {
		u, ok := item.(*unstructured.Unstructured)
		n := len(items) + 1
		if !ok || u.GetKind() == "" || u.GetAPIVersion() == "" {
			return fmt.Errorf("%s item %d is not a Kubernetes object: it needs apiVersion and kind", origin, n)
		}
		items = append(items, Manifest{Object: u, Origin: fmt.Sprintf("%s item %d", origin, n)})
		return nil
	})
	return items, err
}

// Normalize checks every manifest and completes its namespace, returning a new sorted
// slice; it modifies the objects, never the caller's slice order. Rules:
//   - every object needs metadata.name (a ManifestWork takes no generateName);
//   - a cluster-scoped kind must not carry a namespace: the work agent would address it
//     in that namespace and fail;
//   - a namespaced kind without a namespace gets defaultNamespace (plugin env NAMESPACE);
//     with none set it is an error, because the destination namespace Argo CD gives the
//     plugin is the cluster's namespace on the hub, not a namespace on the cluster;
//   - a kind of unknown scope is left as written;
//   - the same object twice is an error (OCM refuses such a ManifestWork).
func Normalize(manifests []Manifest, defaultNamespace string) ([]Manifest, error) {
	objs := make([]*unstructured.Unstructured, 0, len(manifests))
	for _, m := range manifests {
		objs = append(objs, m.Object)
	}
	known := newKindCatalog(objs)

	var errs []error
	seen := map[objectKey]string{}
	out := make([]Manifest, 0, len(manifests))
	for _, m := range manifests {
		obj := m.Object
		gk := obj.GroupVersionKind().GroupKind()
		what := fmt.Sprintf("%s %s (%s)", obj.GetKind(), describeName(obj), m.Origin)
		if obj.GetName() == "" {
			errs = append(errs, fmt.Errorf("%s has no metadata.name: a ManifestWork needs a name on every object (generateName is not supported)", what))
			continue
		}
		if problems := validation.IsDNS1123Subdomain(obj.GetNamespace()); obj.GetNamespace() != "" && len(problems) > 0 {
			errs = append(errs, fmt.Errorf("%s: metadata.namespace %q is not a namespace name (%s)", what, obj.GetNamespace(), strings.Join(problems, "; ")))
			continue
		}
		switch known.scope(gk) {
		case scopeCluster:
			if obj.GetNamespace() != "" {
				errs = append(errs, fmt.Errorf("%s is cluster-scoped but has metadata.namespace %q: remove the namespace", what, obj.GetNamespace()))
				continue
			}
		case scopeNamespaced:
			if obj.GetNamespace() == "" {
				if defaultNamespace == "" {
					errs = append(errs, fmt.Errorf("%s has no metadata.namespace: set it, or set the plugin env NAMESPACE to the namespace on the managed cluster", what))
					continue
				}
				obj.SetNamespace(defaultNamespace)
			}
		}
		key := keyOf(obj)
		if first, dup := seen[key]; dup {
			what = fmt.Sprintf("%s %s (%s)", obj.GetKind(), describeName(obj), m.Origin)
			errs = append(errs, fmt.Errorf("%s is defined twice, also in %s: keep one", what, first))
			continue
		}
		seen[key] = m.Origin
		out = append(out, m)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Manifest) int { return compareObjects(a.Object, b.Object) })
	return out, nil
}

func describeName(obj *unstructured.Unstructured) string {
	switch {
	case obj.GetName() == "":
		return "<no name>"
	case obj.GetNamespace() == "":
		return obj.GetName()
	default:
		return obj.GetNamespace() + "/" + obj.GetName()
	}
}

// objectKey identifies an object on the managed cluster; the version does not count.
type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func keyOf(obj *unstructured.Unstructured) objectKey {
	return objectKey{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// applyOrder ranks kinds in the order the work agent should create them, which applies
// the manifests of a ManifestWork one after the other: namespaces and definitions before
// what lives in them (Helm's install order, shortened). Kinds not listed come last.
var applyOrder = []string{
	"Namespace", "CustomResourceDefinition", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "ClusterRole", "ClusterRoleBinding", "Role",
	"RoleBinding", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet",
	"Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass",
	"Ingress", "APIService",
}

func kindRank(kind string) int {
	if i := slices.Index(applyOrder, kind); i >= 0 {
		return i
	}
	return len(applyOrder)
}

// compareObjects orders by apply order, then group, kind, namespace and name: the same
// objects give the same ManifestWork however the files are laid out.
func compareObjects(a, b *unstructured.Unstructured) int {
	ak, bk := keyOf(a), keyOf(b)
	if c := kindRank(ak.gk.Kind) - kindRank(bk.gk.Kind); c != 0 {
		return c
	}
	for _, c := range []int{
		strings.Compare(ak.gk.Group, bk.gk.Group),
		strings.Compare(ak.gk.Kind, bk.gk.Kind),
		strings.Compare(ak.namespace, bk.namespace),
		strings.Compare(ak.name, bk.name),
	} {
		if c != 0 {
			return c
		}
	}
	return 0
}
