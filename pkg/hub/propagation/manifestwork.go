package propagation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
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

// Feedback rule names read back from the ManifestWork status.
const (
	FeedbackHealthStatus            = "healthStatus"
	FeedbackSyncStatus              = "syncStatus"
	FeedbackOperationStatePhase     = "operationStatePhase"
	FeedbackOperationStateStartedAt = "operationStateStartedAt"
	FeedbackSyncRevision            = "syncRevision"
)

const (
	maxWorkNameLength  = validation.DNS1123SubdomainMaxLength
	uidPrefixLength    = 5
	nameHashLength     = 10
	applicationSetKind = "ApplicationSet"
)

var applicationGVK = argov1alpha1.SchemeGroupVersion.WithKind(argoapp.ApplicationKind)

// Marked reports whether app asks to be pulled: its apps.LabelPullToOCMManagedCluster label parses as true.
// A missing label is not marked; a value that is not a boolean is an error.
func Marked(app *argov1alpha1.Application) (bool, error) {
	v, ok := app.GetLabels()[apps.LabelPullToOCMManagedCluster]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("label %s=%q is not a boolean: set it to \"true\" to pull the Application to a managed cluster, or remove it", apps.LabelPullToOCMManagedCluster, v)
	}
	return b, nil
}

// ValidateClusterAnnotation requires a non-empty target cluster annotation.
func ValidateClusterAnnotation(app *argov1alpha1.Application) error {
	v := strings.TrimSpace(app.GetAnnotations()[apps.AnnotationOCMManagedCluster])
	if v == "" {
		return fmt.Errorf("annotation %s is missing or empty: set it to the name of the ManagedCluster to deploy to", apps.AnnotationOCMManagedCluster)
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s=%q is not a valid cluster name (%s): set it to the name of a ManagedCluster", apps.AnnotationOCMManagedCluster, v, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateAppNamespace requires the optional spoke namespace annotation, when set, to be a namespace name.
func ValidateAppNamespace(app *argov1alpha1.Application) error {
	v, ok := app.GetAnnotations()[apps.AnnotationOCMManagedClusterAppNamespace]
	if !ok {
		return nil
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s=%q is not a namespace name (%s): set it to the Argo CD namespace on the managed cluster, or remove it", apps.AnnotationOCMManagedClusterAppNamespace, v, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateDestinationOverride requires at most one of the destination override
// annotations, a non-empty name, and an https URL with a host as server.
func ValidateDestinationOverride(app *argov1alpha1.Application) error {
	name, hasName := app.GetAnnotations()[apps.AnnotationDestinationName]
	server, hasServer := app.GetAnnotations()[apps.AnnotationDestinationServer]
	switch {
	case hasName && hasServer:
		return fmt.Errorf("annotations %s and %s are both set: keep only one", apps.AnnotationDestinationName, apps.AnnotationDestinationServer)
	case hasName && strings.TrimSpace(name) == "":
		return fmt.Errorf("annotation %s is empty: set it to an Argo CD cluster name on the managed cluster, or remove it", apps.AnnotationDestinationName)
	case hasServer:
		u, err := url.Parse(server)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("annotation %s=%q is not an https URL: set it to a URL like %s, or remove it", apps.AnnotationDestinationServer, server, DefaultDestinationServer)
		}
	}
	return nil
}

// Validate runs every input rule on a marked Application and joins their errors.
func Validate(app *argov1alpha1.Application) error {
	return errors.Join(
		ValidateClusterAnnotation(app),
		ValidateAppNamespace(app),
		ValidateDestinationOverride(app),
	)
}

// TargetCluster is the managed cluster app is pulled to.
func TargetCluster(app *argov1alpha1.Application) string {
	return strings.TrimSpace(app.GetAnnotations()[apps.AnnotationOCMManagedCluster])
}

// WorkName is the ManifestWork name of app: "<name>-<first 5 chars of UID>", truncated
// with a stable hash suffix when longer than a Kubernetes object name may be.
func WorkName(app *argov1alpha1.Application) string {
	uid := string(app.GetUID())
	if len(uid) > uidPrefixLength {
		uid = uid[:uidPrefixLength]
	}
	name := app.GetName() + "-" + uid
	if len(name) <= maxWorkNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:nameHashLength]
	prefix := strings.TrimRight(name[:maxWorkNameLength-nameHashLength-1], "-.")
	return prefix + "-" + suffix
}

// owningApplicationSet returns the ApplicationSet controller owner of app, if any.
func owningApplicationSet(app *argov1alpha1.Application) (string, bool) {
	for _, ref := range app.GetOwnerReferences() {
		if ref.Kind == applicationSetKind && strings.HasPrefix(ref.APIVersion, argov1alpha1.SchemeGroupVersion.Group+"/") {
			return ref.Name, true
		}
	}
	return "", false
}

// hubAnnotations are the annotations naming the hub Application, for the work and the payload.
func hubAnnotations(app *argov1alpha1.Application) map[string]string {
	a := map[string]string{
		apps.AnnotationHubApplicationNamespace: app.GetNamespace(),
		apps.AnnotationHubApplicationName:      app.GetName(),
	}
	if appSet, ok := owningApplicationSet(app); ok {
		a[apps.AnnotationHostingApplicationSet] = app.GetNamespace() + "/" + appSet
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
	if _, ok := owningApplicationSet(app); ok {
		labels[apps.LabelApplicationSet] = "true"
	}
	return &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        WorkName(app),
			Namespace:   TargetCluster(app),
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
		FeedbackRules: []workv1.FeedbackRule{{
			Type: workv1.JSONPathsType,
			JsonPaths: []workv1.JsonPath{
				{Name: FeedbackHealthStatus, Path: ".status.health.status"},
				{Name: FeedbackSyncStatus, Path: ".status.sync.status"},
				{Name: FeedbackOperationStatePhase, Path: ".status.operationState.phase"},
				{Name: FeedbackOperationStateStartedAt, Path: ".status.operationState.startedAt"},
				{Name: FeedbackSyncRevision, Path: ".status.sync.revision"},
			},
		}},
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
