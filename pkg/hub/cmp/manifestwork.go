package cmp

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// MaxManifestsSize is the largest total size of a ManifestWork's manifests OCM accepts,
// summed over Manifest.Size(): pullmodel.ManifestsLimit, the work webhook's default
// --manifestLimit (the same default in api v1.2.0 utils/work/v1/workvalidator/validator.go).
// A hub may raise it; the plugin keeps to the default so a work it prints is accepted by
// every hub.
const MaxManifestsSize = pullmodel.ManifestsLimit

// BuildManifestWork wraps normalized manifests (see Normalize) into the ManifestWork for
// env: named after the Application, in the target cluster's namespace, with well-known
// status feedback for every manifest so the work's status shows each object's health.
func BuildManifestWork(manifests []Manifest, env Environment) (*workv1.ManifestWork, error) {
	objs := make([]*unstructured.Unstructured, 0, len(manifests))
	for _, m := range manifests {
		objs = append(objs, m.Object)
	}
	catalog := newKindCatalog(objs)

	work := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        env.WorkName(),
			Namespace:   env.Cluster,
			Labels:      map[string]string{apps.LabelHubRendered: "true"},
			Annotations: map[string]string{apps.AnnotationHubApplicationName: env.AppName},
		},
	}
	if env.AppNamespace != "" {
		work.Annotations[apps.AnnotationHubApplicationNamespace] = env.AppNamespace
	}
	if env.Revision != "" {
		work.Annotations[apps.AnnotationSourceRevision] = env.Revision
	}

	size := 0
	for _, m := range manifests {
		// encoding/json writes map keys sorted: the same object gives the same bytes.
		raw, err := json.Marshal(m.Object.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", m.Origin, err)
		}
		manifest := workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
		size += manifest.Size()
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, manifest)

		gvk := m.Object.GroupVersionKind()
		work.Spec.ManifestConfigs = append(work.Spec.ManifestConfigs, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{
				Group:     gvk.Group,
				Resource:  catalog.resource(gvk),
				Name:      m.Object.GetName(),
				Namespace: m.Object.GetNamespace(),
			},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
		})
	}
	if size > MaxManifestsSize {
		return nil, fmt.Errorf("the %d manifests take %d bytes, more than the %d bytes a ManifestWork may hold: split the Application into smaller ones", len(manifests), size, MaxManifestsSize)
	}
	return work, nil
}

// MarshalManifestWork prints work as the plugin's output: YAML with sorted keys and
// without the empty status and creation timestamp a typed object would carry, which
// Argo CD would otherwise show as a diff.
func MarshalManifestWork(work *workv1.ManifestWork) ([]byte, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(work)
	if err != nil {
		return nil, fmt.Errorf("encoding ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
	}
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	out, err := yaml.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encoding ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
	}
	return out, nil
}
