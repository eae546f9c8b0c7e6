// Package builders builds the Argo CD objects tests start from, fixture style: each call
// says one thing that matters to the test, and the rest is a plausible default.
//
//	app := builders.Application("guestbook").Pulled().Cluster("cluster1").Build()
//
// The unit tests of pkg/ use it as well as the suites under test/, so it imports nothing
// of the project but its API packages under pkg/apis.
package builders

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// Defaults of every Application the builder starts.
const (
	// ApplicationNamespace is Argo CD's namespace, on the hub and on a managed cluster.
	ApplicationNamespace = "argocd"
	// GuestbookRepoURL and GuestbookPath are the source of Argo CD's guestbook example.
	GuestbookRepoURL = "https://github.com/argoproj/argocd-example-apps"
	GuestbookPath    = "guestbook"
	// GuestbookNamespace is where the guestbook is deployed.
	GuestbookNamespace = "guestbook"
)

// ApplicationBuilder builds an Argo CD Application. Each method sets one thing and
// returns the builder; Build returns a copy, so one builder can build several.
type ApplicationBuilder struct {
	app argov1alpha1.Application
}

// Application starts an Application named name in the argocd namespace that deploys Argo
// CD's guestbook example (project default, revision HEAD) into the guestbook namespace of
// the cluster it runs on. It has no labels, annotations or status.
func Application(name string) *ApplicationBuilder {
	return &ApplicationBuilder{app: argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ApplicationNamespace},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: GuestbookRepoURL, Path: GuestbookPath, TargetRevision: "HEAD"},
			Destination: argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: GuestbookNamespace},
		},
	}}
}

// Build returns the Application built so far.
func (b *ApplicationBuilder) Build() *argov1alpha1.Application {
	return b.app.DeepCopy()
}

// Metadata.

// Namespace puts the Application in namespace.
func (b *ApplicationBuilder) Namespace(namespace string) *ApplicationBuilder {
	b.app.Namespace = namespace
	return b
}

// UID sets the UID, which the API server sets on create: for tests without one.
func (b *ApplicationBuilder) UID(uid types.UID) *ApplicationBuilder {
	b.app.UID = uid
	return b
}

// ResourceVersion sets the resourceVersion, which the API server sets: for tests without one.
func (b *ApplicationBuilder) ResourceVersion(resourceVersion string) *ApplicationBuilder {
	b.app.ResourceVersion = resourceVersion
	return b
}

// Generation sets the generation, which the API server sets: for tests without one.
func (b *ApplicationBuilder) Generation(generation int64) *ApplicationBuilder {
	b.app.Generation = generation
	return b
}

// Label sets the label key to value.
func (b *ApplicationBuilder) Label(key, value string) *ApplicationBuilder {
	if b.app.Labels == nil {
		b.app.Labels = map[string]string{}
	}
	b.app.Labels[key] = value
	return b
}

// WithoutLabel removes the label key.
func (b *ApplicationBuilder) WithoutLabel(key string) *ApplicationBuilder {
	delete(b.app.Labels, key)
	return b
}

// Annotation sets the annotation key to value.
func (b *ApplicationBuilder) Annotation(key, value string) *ApplicationBuilder {
	if b.app.Annotations == nil {
		b.app.Annotations = map[string]string{}
	}
	b.app.Annotations[key] = value
	return b
}

// WithoutAnnotation removes the annotation key.
func (b *ApplicationBuilder) WithoutAnnotation(key string) *ApplicationBuilder {
	delete(b.app.Annotations, key)
	return b
}

// Finalizer adds the finalizer, e.g. Argo CD's resources finalizer.
func (b *ApplicationBuilder) Finalizer(finalizer string) *ApplicationBuilder {
	b.app.Finalizers = append(b.app.Finalizers, finalizer)
	return b
}

// OwnedBy makes the Application one the ApplicationSet appSet (in the Application's
// namespace) rendered: its controller owner reference, as the ApplicationSet controller
// sets it.
func (b *ApplicationBuilder) OwnedBy(appSet string, uid types.UID) *ApplicationBuilder {
	return b.OwnerReference(metav1.OwnerReference{
		APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "ApplicationSet", Name: appSet, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
}

// OwnerReference adds ref as it is, for owners OwnedBy does not describe.
func (b *ApplicationBuilder) OwnerReference(ref metav1.OwnerReference) *ApplicationBuilder {
	b.app.OwnerReferences = append(b.app.OwnerReferences, ref)
	return b
}

// The pull model on the hub.

// Pulled marks a hub Application for the pull model, as the pull model's ApplicationSet
// template does: the pull label, and the annotation that keeps the hub's own Argo CD from
// reconciling it.
func (b *ApplicationBuilder) Pulled() *ApplicationBuilder {
	return b.Label(apps.LabelPullToOCMManagedCluster, "true").Annotation(apps.AnnotationSkipReconcile, "true")
}

// Cluster names the managed cluster a hub Application is pulled to.
func (b *ApplicationBuilder) Cluster(cluster string) *ApplicationBuilder {
	return b.Annotation(apps.AnnotationOCMManagedCluster, cluster)
}

// The pull model on a managed cluster.

// PulledFrom makes a managed cluster's Application the payload of the hub Application
// hubNamespace/hubName: the annotations propagation puts on it.
func (b *ApplicationBuilder) PulledFrom(hubNamespace, hubName string) *ApplicationBuilder {
	return b.Annotation(apps.AnnotationHubApplicationNamespace, hubNamespace).Annotation(apps.AnnotationHubApplicationName, hubName)
}

// HostingApplicationSet names the hub ApplicationSet ("namespace/name") a managed
// cluster's Application comes from, as propagation annotates it.
func (b *ApplicationBuilder) HostingApplicationSet(namespacedName string) *ApplicationBuilder {
	return b.Annotation(apps.AnnotationHostingApplicationSet, namespacedName)
}

// Spec.

// Destination replaces the destination.
func (b *ApplicationBuilder) Destination(destination argov1alpha1.ApplicationDestination) *ApplicationBuilder {
	b.app.Spec.Destination = destination
	return b
}

// Source replaces the source.
func (b *ApplicationBuilder) Source(source argov1alpha1.ApplicationSource) *ApplicationBuilder {
	b.app.Spec.Source = &source
	return b
}

// Plugin renders the source with the Config Management Plugin name, e.g. the hub's
// ocm-manifestwork for hub-rendered delivery.
func (b *ApplicationBuilder) Plugin(name string) *ApplicationBuilder {
	b.app.Spec.Source.Plugin = &argov1alpha1.ApplicationSourcePlugin{Name: name}
	return b
}

// SyncPolicy sets the sync policy.
func (b *ApplicationBuilder) SyncPolicy(policy argov1alpha1.SyncPolicy) *ApplicationBuilder {
	b.app.Spec.SyncPolicy = &policy
	return b
}

// Operation requests op, as `argocd app sync` does.
func (b *ApplicationBuilder) Operation(op argov1alpha1.Operation) *ApplicationBuilder {
	b.app.Operation = &op
	return b
}

// Status, as Argo CD writes it.

// Status replaces the whole status.
func (b *ApplicationBuilder) Status(status argov1alpha1.ApplicationStatus) *ApplicationBuilder {
	b.app.Status = status
	return b
}

// Sync sets the sync status and the revision it compared.
func (b *ApplicationBuilder) Sync(status argov1alpha1.SyncStatusCode, revision string) *ApplicationBuilder {
	b.app.Status.Sync.Status, b.app.Status.Sync.Revision = status, revision
	return b
}

// Revisions sets the compared revisions of a multi-source Application.
func (b *ApplicationBuilder) Revisions(revisions ...string) *ApplicationBuilder {
	b.app.Status.Sync.Revisions = revisions
	return b
}

// Health sets the Application's health.
func (b *ApplicationBuilder) Health(status health.HealthStatusCode, message string) *ApplicationBuilder {
	b.app.Status.Health = argov1alpha1.HealthStatus{Status: status, Message: message}
	return b
}

// OperationState sets the state of the last or running operation.
func (b *ApplicationBuilder) OperationState(state argov1alpha1.OperationState) *ApplicationBuilder {
	b.app.Status.OperationState = &state
	return b
}

// Condition adds a condition.
func (b *ApplicationBuilder) Condition(condition argov1alpha1.ApplicationCondition) *ApplicationBuilder {
	b.app.Status.Conditions = append(b.app.Status.Conditions, condition)
	return b
}

// Resource adds a managed resource's status; a nil Health is how Argo CD v3 keeps it
// when health lives in the resource tree (ResourceHealthSource).
func (b *ApplicationBuilder) Resource(resource argov1alpha1.ResourceStatus) *ApplicationBuilder {
	b.app.Status.Resources = append(b.app.Status.Resources, resource)
	return b
}

// ResourceHealthSource says where Argo CD keeps the resources' health.
func (b *ApplicationBuilder) ResourceHealthSource(source argov1alpha1.ResourceHealthLocation) *ApplicationBuilder {
	b.app.Status.ResourceHealthSource = source
	return b
}
