package propagation

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/requests"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/canonicaljson"

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Argo CD strings the propagation needs besides the wire contract in pkg/apis/apps.
const (
	// LabelLocalCluster marks the hub's own ManagedCluster, never a pull-model target.
	LabelLocalCluster = "local-cluster"

	// defaultDestinationServer is where the spoke's Argo CD deploys: its own cluster.
	defaultDestinationServer = "https://kubernetes.default.svc"
)

var applicationGVK = argov1alpha1.SchemeGroupVersion.WithKind(argoapp.ApplicationKind)

// hubAnnotations are the annotations naming the hub Application, for the work and the payload.
func hubAnnotations(app metav1.Object) map[string]string {
	a := map[string]string{
		apps.AnnotationHubApplicationNamespace: app.GetNamespace(),
		apps.AnnotationHubApplicationName:      app.GetName(),
	}
	if owners := pullmodel.OwningApplicationSets(app); len(owners) > 0 {
		a[apps.AnnotationHostingApplicationSet] = owners[0].String()
	}
	return a
}

// payloadStrippedLabels and payloadStrippedAnnotations are the keys the payload never
// carries from the hub Application: hub-only selection and configuration; the hub's
// requests, which travel as request annotations instead (pkg/contract/requests); and the keys the
// agent owns on the spoke, which the work agent would otherwise own and reset.
var (
	payloadStrippedLabels      = []string{apps.LabelPullToOCMManagedCluster}
	payloadStrippedAnnotations = []string{
		apps.AnnotationOCMManagedCluster, apps.AnnotationOCMManagedClusterAppNamespace, apps.AnnotationSkipReconcile,
		apps.AnnotationDestinationName, apps.AnnotationDestinationServer,
		apps.AnnotationRefresh, apps.AnnotationOperationRequest, apps.AnnotationRefreshRequest,
		apps.AnnotationOperationDelivered, apps.AnnotationRefreshDelivered,
	}
)

// buildPayload returns the Application the managed cluster gets for app, the hub
// Application as stored: everything the user wrote, known to this module's Argo CD types
// or not, except what the wire contract rewrites. Metadata is name, namespace (the
// app-namespace annotation's when set), labels and annotations without the hub-only keys
// plus the hub-application annotations and reqs, and finalizers; spec is app's with the
// destination pointed at the managed cluster itself (or the override annotations); no
// status and no .operation. It does not modify app.
func buildPayload(app *unstructured.Unstructured, reqs requests.Carried) (*unstructured.Unstructured, error) {
	spec, _, err := unstructured.NestedMap(app.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("reading the spec of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	destination, _, err := unstructured.NestedMap(spec, "destination")
	if err != nil {
		return nil, fmt.Errorf("reading the destination of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	if destination == nil {
		destination = map[string]any{}
	}
	delete(destination, "name")
	destination["server"] = defaultDestinationServer
	if name, ok := app.GetAnnotations()[apps.AnnotationDestinationName]; ok {
		delete(destination, "server")
		destination["name"] = name
	}
	if server, ok := app.GetAnnotations()[apps.AnnotationDestinationServer]; ok {
		delete(destination, "name")
		destination["server"] = server
	}
	spec["destination"] = destination

	p := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	p.SetGroupVersionKind(applicationGVK)
	p.SetName(app.GetName())
	p.SetNamespace(app.GetNamespace())
	if ns := app.GetAnnotations()[apps.AnnotationOCMManagedClusterAppNamespace]; ns != "" {
		p.SetNamespace(ns)
	}
	p.SetLabels(copyWithout(app.GetLabels(), payloadStrippedLabels))
	annotations := copyWithout(app.GetAnnotations(), payloadStrippedAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range hubAnnotations(app) {
		annotations[k] = v
	}
	if err := reqs.Annotate(annotations); err != nil {
		return nil, fmt.Errorf("encoding the requests of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	p.SetAnnotations(annotations)
	p.SetFinalizers(app.GetFinalizers())
	return p, nil
}

// BuildManifestWork returns the ManifestWork for app, a marked and valid hub Application
// (see validate) as stored, carrying reqs. It does not modify app.
func BuildManifestWork(app *unstructured.Unstructured, reqs requests.Carried) (*workv1.ManifestWork, error) {
	payload, err := buildPayload(app, reqs)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(payload.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the payload of Application %s/%s: %w", app.GetNamespace(), app.GetName(), err)
	}
	labels := map[string]string{apps.LabelPullToOCMManagedCluster: "true"}
	if len(pullmodel.OwningApplicationSets(app)) > 0 {
		labels[apps.LabelApplicationSet] = "true"
	}
	return &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        pullmodel.WorkName(app),
			Namespace:   pullmodel.TargetCluster(app),
			Labels:      labels,
			Annotations: hubAnnotations(app),
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{
				Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}},
			},
			ManifestConfigs: []workv1.ManifestConfigOption{manifestConfig(payload)},
		},
	}, nil
}

func manifestConfig(payload *unstructured.Unstructured) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{
			Group:     applicationGVK.Group,
			Resource:  argoapp.ApplicationPlural,
			Name:      payload.GetName(),
			Namespace: payload.GetNamespace(),
		},
		FeedbackRules:      pullmodel.FeedbackRules(),
		FeedbackScrapeType: workv1.FeedbackPollType,
		UpdateStrategy: &workv1.UpdateStrategy{
			Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{
				Force:        true,
				FieldManager: workv1.DefaultFieldManager,
				// The payload never carries .operation nor the refresh annotation: the agent
				// sets them from the request annotations, once per request, and the spoke's
				// Argo CD clears them. Naming them here also makes the work agent skip the
				// apply while the ManifestWork is unchanged (it compares a hash).
				IgnoreFields: []workv1.IgnoreField{{
					Condition: workv1.IgnoreFieldsConditionOnSpokeChange,
					JSONPaths: []string{".operation", `.metadata.annotations.argocd\.argoproj\.io/refresh`},
				}},
			},
		},
	}
}

// copyWithout returns a copy of m without the keys in drop; nil when nothing is left.
func copyWithout(m map[string]string, drop []string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range drop {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// workUpToDate reports whether existing already carries everything desired says: its
// labels and annotations, the same payload and the same manifest configs. Keys other
// actors added are left alone.
func workUpToDate(existing, desired *workv1.ManifestWork) bool {
	if !containsAll(existing.Labels, desired.Labels) || !containsAll(existing.Annotations, desired.Annotations) {
		return false
	}
	if !equality.Semantic.DeepEqual(existing.Spec.ManifestConfigs, desired.Spec.ManifestConfigs) {
		return false
	}
	if len(existing.Spec.Workload.Manifests) != len(desired.Spec.Workload.Manifests) {
		return false
	}
	for i := range desired.Spec.Workload.Manifests {
		if !samePayload(existing.Spec.Workload.Manifests[i].Raw, desired.Spec.Workload.Manifests[i].Raw) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(existing.Spec.DeleteOption, desired.Spec.DeleteOption)
}

// samePayload compares two encoded payloads as JSON values, every field included (Argo CD
// 3's too), so key order and null versus absent do not count as a change.
func samePayload(a, b []byte) bool {
	ca, errA := canonicaljson.Reencode(a)
	cb, errB := canonicaljson.Reencode(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
