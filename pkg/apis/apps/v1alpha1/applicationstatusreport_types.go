package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of an ApplicationStatusReport. The schema refuses anything larger; the agent
// truncates to these bounds and records what it dropped in Truncation, so a report of an
// Application with thousands of resources stays far below the API server's object limit.
// The kubebuilder markers below repeat these numbers: change both together.
const (
	// MaxMessageLength bounds every message (health, operation, condition).
	MaxMessageLength = 1024
	// MaxResourceMessageLength bounds the health message of one resource.
	MaxResourceMessageLength = 256
	// MaxResources bounds the resources listed in one report.
	MaxResources = 1000
	// MaxConditions bounds the conditions listed in one report.
	MaxConditions = 50
	// MaxRevisions bounds the revisions of a multi-source Application.
	MaxRevisions = 20
	// MaxNotHealthyChildren bounds the not-healthy children of a report's resource tree.
	MaxNotHealthyChildren = 50
)

// ApplicationStatusReport is what the argocd-pull agent on a managed cluster reports about
// one Argo CD Application that was pulled from the hub: its sync, health and operation
// state, its conditions (errors and warnings) and the resources it manages.
//
// There is one report per Application per cluster, in that cluster's namespace on the hub.
// Only the cluster's own agent may write there. The hub reads these reports to build
// MulticlusterApplicationSetReports and to mirror status onto hub Applications.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=appstatusreport;appstatusreports;asr,categories=ocm;argocd-pull
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.source.hubApplicationName`,description="The hub Application this Application was pulled from"
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.sync.status`,description="Argo CD sync status on the cluster"
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health.status`,description="Argo CD health status on the cluster"
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operationState.phase`,description="Phase of the last sync operation"
// +kubebuilder:printcolumn:name="Observed",type=date,JSONPath=`.status.observedAt`,description="When the agent last observed the Application"
type ApplicationStatusReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Source identifies the Application on the managed cluster and where it came from.
	// +required
	Source ApplicationReportSource `json:"source"`

	// Status is the Application's state as the agent last observed it.
	// +required
	Status ApplicationReportStatus `json:"status"`
}

// ApplicationStatusReportList contains a list of ApplicationStatusReports.
//
// +kubebuilder:object:root=true
type ApplicationStatusReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationStatusReport `json:"items"`
}

// ApplicationReportSource identifies a reported Application.
type ApplicationReportSource struct {
	// Cluster is the managed cluster the Application runs on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`

	// Namespace of the Application on the managed cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// Name of the Application on the managed cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// UID of the Application on the managed cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid,omitempty"`

	// HubApplicationNamespace is the namespace of the hub Application it was pulled from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	HubApplicationNamespace string `json:"hubApplicationNamespace"`

	// HubApplicationName is the name of the hub Application it was pulled from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	HubApplicationName string `json:"hubApplicationName"`

	// ApplicationSet is "<namespace>/<name>" of the hub ApplicationSet that owns the hub
	// Application; empty for a standalone Application.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	ApplicationSet string `json:"applicationSet,omitempty"`
}

// SyncStatusCode is an Argo CD sync status.
// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown
type SyncStatusCode string

// Argo CD sync statuses.
const (
	SyncStatusSynced    SyncStatusCode = "Synced"
	SyncStatusOutOfSync SyncStatusCode = "OutOfSync"
	SyncStatusUnknown   SyncStatusCode = "Unknown"
)

// HealthStatusCode is an Argo CD health status.
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Suspended;Missing;Unknown
type HealthStatusCode string

// Argo CD health statuses.
const (
	HealthStatusHealthy     HealthStatusCode = "Healthy"
	HealthStatusProgressing HealthStatusCode = "Progressing"
	HealthStatusDegraded    HealthStatusCode = "Degraded"
	HealthStatusSuspended   HealthStatusCode = "Suspended"
	HealthStatusMissing     HealthStatusCode = "Missing"
	HealthStatusUnknown     HealthStatusCode = "Unknown"
)

// OperationPhase is the phase of an Argo CD operation.
// +kubebuilder:validation:Enum=Running;Terminating;Failed;Error;Succeeded
type OperationPhase string

// Argo CD operation phases.
const (
	OperationRunning     OperationPhase = "Running"
	OperationTerminating OperationPhase = "Terminating"
	OperationFailed      OperationPhase = "Failed"
	OperationError       OperationPhase = "Error"
	OperationSucceeded   OperationPhase = "Succeeded"
)

// ResourceHealthSource says where the report's per-resource health comes from. Unset:
// from the Application (Argo CD 2.x, or controller.resource.health.persist "true").
// +kubebuilder:validation:Enum=appTree;redisTree
type ResourceHealthSource string

const (
	// ResourceHealthSourceAppTree means Argo CD keeps per-resource health in its resource
	// tree (the Argo CD v3 default), not in the Application, and the agent could not read
	// that tree: the report has no per-resource health. The agent's ManagedClusterAddOn
	// condition ResourceTreeReadable says why.
	ResourceHealthSourceAppTree ResourceHealthSource = "appTree"
	// ResourceHealthSourceRedisTree means Argo CD keeps per-resource health in its resource
	// tree and the agent read it from Argo CD's Redis: resources carry that health, and
	// ResourceTree summarises their children.
	ResourceHealthSourceRedisTree ResourceHealthSource = "redisTree"
)

// ApplicationReportStatus is the observed state of a reported Application.
type ApplicationReportStatus struct {
	// ObservedAt is when the agent read the Application this report was built from.
	// +required
	ObservedAt metav1.Time `json:"observedAt"`

	// Sync is the Application's sync state.
	// +optional
	Sync SyncReport `json:"sync,omitempty"`

	// Health is the Application's health.
	// +optional
	Health HealthReport `json:"health,omitempty"`

	// OperationState is the state of the last sync operation, if any.
	// +optional
	OperationState *OperationStateReport `json:"operationState,omitempty"`

	// Conditions are the Application's errors and warnings.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Conditions []ApplicationConditionReport `json:"conditions,omitempty"`

	// Resources are the resources the Application manages.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Resources []ResourceStatusReport `json:"resources,omitempty"`

	// ResourceHealthSource is set when per-resource health is not kept in the Application
	// (Argo CD v3's default): the resources then carry no health, by design, not by error.
	// +optional
	ResourceHealthSource ResourceHealthSource `json:"resourceHealthSource,omitempty"`

	// ResourceTree summarises the children of the Application's resources (ReplicaSets,
	// Pods, ...) as Argo CD's resource tree shows them, when the agent read the tree
	// (resourceHealthSource redisTree).
	// +optional
	ResourceTree *ResourceTreeReport `json:"resourceTree,omitempty"`

	// Truncation is set when the report had to drop or shorten content to stay small.
	// +optional
	Truncation *Truncation `json:"truncation,omitempty"`
}

// SyncReport is the sync state of an Application.
type SyncReport struct {
	// Status is Synced, OutOfSync or Unknown.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`

	// Revision is the revision the Application is compared against (single source).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Revision string `json:"revision,omitempty"`

	// Revisions are the revisions of a multi-source Application, one per source.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=256
	Revisions []string `json:"revisions,omitempty"`

	// ComparedSources identifies the sources Argo CD last compared the Application
	// against (status.sync.comparedTo): report.SourcesDigest of them. The hub compares it
	// with the same digest of the hub Application's sources to tell a change the cluster
	// has not compared yet. Empty before Argo CD's first comparison.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ComparedSources string `json:"comparedSources,omitempty"`
}

// HealthReport is the health of an Application or resource.
type HealthReport struct {
	// Status is Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`

	// Message explains the status.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// OperationStateReport is the state of an Application's last sync operation.
type OperationStateReport struct {
	// Phase is Running, Terminating, Failed, Error or Succeeded.
	// +required
	Phase OperationPhase `json:"phase"`

	// Message says what the operation did or why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// StartedAt is when the operation started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// FinishedAt is when the operation finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// ApplicationConditionReport is one of an Application's conditions.
type ApplicationConditionReport struct {
	// Type is the Argo CD condition type, e.g. SyncError, ComparisonError,
	// OperationError, or a warning such as RepeatedResourceWarning.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Type string `json:"type"`

	// Message says what is wrong.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// LastTransitionTime is when Argo CD first observed the condition.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ResourceStatusReport is the state of one resource an Application manages.
type ResourceStatusReport struct {
	// Group of the resource; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// Version of the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version,omitempty"`

	// Kind of the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Namespace of the resource; empty for cluster-scoped resources.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name of the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Status is the resource's sync status.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`

	// Health is the resource's health, when Argo CD keeps it in the Application or the
	// agent read it from Argo CD's resource tree (see resourceHealthSource).
	// +optional
	Health *ResourceHealthReport `json:"health,omitempty"`
}

// ResourceTreeReport summarises the children in an Application's resource tree: the
// resources Kubernetes created for the ones the Application manages.
type ResourceTreeReport struct {
	// Children is how many children the tree holds, healthy or not.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Children int32 `json:"children,omitempty"`

	// NotHealthy are the children whose health is not Healthy, the most severe first
	// (Degraded, Missing, Unknown, then Progressing and Suspended); Truncation counts
	// those left out.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	NotHealthy []ChildResourceReport `json:"notHealthy,omitempty"`
}

// ChildResourceReport is one child in an Application's resource tree.
type ChildResourceReport struct {
	// Group of the resource; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// Version of the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version,omitempty"`

	// Kind of the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Namespace of the resource; empty for cluster-scoped resources.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name of the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Parent is the resource of the Application this child belongs to, "Kind/name"
	// (through any number of levels: a Pod's parent is its Deployment).
	// +optional
	// +kubebuilder:validation:MaxLength=320
	Parent string `json:"parent,omitempty"`

	// Health is the child's health as Argo CD computed it.
	// +optional
	Health ResourceHealthReport `json:"health,omitempty"`
}

// ResourceHealthReport is the health of one resource.
type ResourceHealthReport struct {
	// Status is Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`

	// Message explains the status.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// Truncation records what a report left out to stay within its bounds.
type Truncation struct {
	// OmittedResources is how many resources were left out of the list.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedResources int32 `json:"omittedResources,omitempty"`

	// OmittedConditions is how many conditions were left out of the list.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedConditions int32 `json:"omittedConditions,omitempty"`

	// OmittedChildren is how many not-healthy children were left out of resourceTree.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedChildren int32 `json:"omittedChildren,omitempty"`

	// ShortenedMessages is how many messages were cut to their maximum length.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortenedMessages int32 `json:"shortenedMessages,omitempty"`
}

func init() {
	SchemeBuilder.Register(&ApplicationStatusReport{}, &ApplicationStatusReportList{})
}
