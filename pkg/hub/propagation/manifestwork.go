package propagation

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/pullmodel"

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Argo CD strings the propagation needs besides the wire contract in pkg/apis/apps.
const (
	// ResourcesFinalizer is Argo CD's cascading-delete finalizer.
	ResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
	// LabelLocalCluster marks the hub's own ManagedCluster, never a pull-model target.
	LabelLocalCluster = "local-cluster"

	// DefaultDestinationServer is where the spoke's Argo CD deploys: its own cluster.
	DefaultDestinationServer = "https://kubernetes.default.svc"
)

var applicationGVK = argov1alpha1.SchemeGroupVersion.WithKind(argoapp.ApplicationKind)

// hubAnnotations are the annotations naming the hub Application, for the work and the payload.
func hubAnnotations(app *argov1alpha1.Application) map[string]string {
	a := map[string]string{
		apps.AnnotationHubApplicationNamespace: app.GetNamespace(),
		apps.AnnotationHubApplicationName:      app.GetName(),
	}
	if owners := pullmodel.OwningApplicationSets(app); len(owners) > 0 {
		a[apps.AnnotationHostingApplicationSet] = owners[0].String()
	}
	return a
}

// Payload is the Application the managed cluster receives: spec, operation, finalizers,
// labels and annotations, never status.
type Payload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              argov1alpha1.ApplicationSpec `json:"spec"`
	Operation         *argov1alpha1.Operation      `json:"operation,omitempty"`
}

// payloadStrippedLabels and payloadStrippedAnnotations are hub-only selection and configuration keys.
var (
	payloadStrippedLabels      = []string{apps.LabelPullToOCMManagedCluster}
	payloadStrippedAnnotations = []string{
		apps.AnnotationOCMManagedCluster, apps.AnnotationOCMManagedClusterAppNamespace, apps.AnnotationSkipReconcile,
		apps.AnnotationDestinationName, apps.AnnotationDestinationServer,
	}
)

// BuildPayload returns the Application the managed cluster gets for app. It does not
// modify app.
func BuildPayload(app *argov1alpha1.Application) *Payload {
	p := &Payload{
		TypeMeta: metav1.TypeMeta{APIVersion: applicationGVK.GroupVersion().String(), Kind: applicationGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        app.GetName(),
			Namespace:   app.GetNamespace(),
			Labels:      copyWithout(app.GetLabels(), payloadStrippedLabels),
			Annotations: copyWithout(app.GetAnnotations(), payloadStrippedAnnotations),
			Finalizers:  append([]string(nil), app.GetFinalizers()...),
		},
		Spec:      *app.Spec.DeepCopy(),
		Operation: app.Operation.DeepCopy(),
	}
	if ns := app.GetAnnotations()[apps.AnnotationOCMManagedClusterAppNamespace]; ns != "" {
		p.Namespace = ns
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for k, v := range hubAnnotations(app) {
		p.Annotations[k] = v
	}
	p.Spec.Destination.Name = ""
	p.Spec.Destination.Server = DefaultDestinationServer
	if name, ok := app.GetAnnotations()[apps.AnnotationDestinationName]; ok {
		p.Spec.Destination.Name, p.Spec.Destination.Server = name, ""
	}
	if server, ok := app.GetAnnotations()[apps.AnnotationDestinationServer]; ok {
		p.Spec.Destination.Name, p.Spec.Destination.Server = "", server
	}
	return p
}

// BuildManifestWork returns the ManifestWork for a marked, valid app (see Validate). It
// does not modify app.
func BuildManifestWork(app *argov1alpha1.Application) (*workv1.ManifestWork, error) {
	payload := BuildPayload(app)
	raw, err := json.Marshal(payload)
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

func manifestConfig(payload *Payload) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{
			Group:     applicationGVK.Group,
			Resource:  argoapp.ApplicationPlural,
			Name:      payload.Name,
			Namespace: payload.Namespace,
		},
		FeedbackRules:      pullmodel.FeedbackRules(),
		FeedbackScrapeType: workv1.FeedbackPollType,
		UpdateStrategy: &workv1.UpdateStrategy{
			Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{
				Force:        true,
				FieldManager: workv1.DefaultFieldManager,
				// The spoke's Argo CD clears .operation and the refresh annotation once
				// done; re-applying them unchanged would start it all over again.
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

// WorkUpToDate reports whether existing already carries everything desired says: its
// labels and annotations, the same payload and the same manifest configs. Keys other
// actors added are left alone.
func WorkUpToDate(existing, desired *workv1.ManifestWork) bool {
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

// samePayload compares two encoded payloads as typed Applications, so key order and
// null versus absent do not count as a change.
func samePayload(a, b []byte) bool {
	ca, errA := canonicalPayload(a)
	cb, errB := canonicalPayload(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

// canonicalPayload re-encodes raw through Payload. (Argo CD types carry unexported
// fields, so they are compared encoded rather than with reflection.)
func canonicalPayload(raw []byte) ([]byte, error) {
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return json.Marshal(&p)
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
