package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// LabelHostingApplicationSet marks a MulticlusterApplicationSetReport with the
// ApplicationSet it belongs to; the same key annotates ManifestWorks.
const LabelHostingApplicationSet = apps.AnnotationHostingApplicationSet

// MulticlusterApplicationSetReport reports the status of an ApplicationSet's Applications on
// every managed cluster they were pulled to: a summary of how many clusters are in each
// state, the resources deployed, and per cluster the sync and health state with any error
// or warning. It has the ApplicationSet's name and namespace.
//
// The schema is the one established by the earlier pull-model integration; readers of that
// schema keep working. The object has no status subresource: the hub writes it whole.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=appsetreport;appsetreports;mcasr,categories=ocm;argocd-pull
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.statuses.summary.clusters`,description="Clusters the ApplicationSet's Applications were pulled to"
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.statuses.summary.healthy`,description="Clusters whose Application is Healthy"
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.statuses.summary.synced`,description="Clusters whose Application is Synced"
// +kubebuilder:printcolumn:name="In Progress",type=string,JSONPath=`.statuses.summary.inProgress`,description="Clusters whose Application is Progressing"
// +kubebuilder:printcolumn:name="Not Synced",type=string,JSONPath=`.statuses.summary.notSynced`,description="Applications that are not Synced"
// +kubebuilder:printcolumn:name="Not Healthy",type=string,JSONPath=`.statuses.summary.notHealthy`,description="Applications that are not Healthy (Progressing included)"
// +kubebuilder:printcolumn:name="Agents Unavailable",type=string,JSONPath=`.statuses.summary.agentsUnavailable`,description="Clusters whose argocd-pull agent is not available: their details may be stale"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MulticlusterApplicationSetReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Statuses holds the report.
	// +optional
	Statuses AppConditions `json:"statuses,omitempty"`
}

// MulticlusterApplicationSetReportList contains a list of MulticlusterApplicationSetReports.
//
// +kubebuilder:object:root=true
type MulticlusterApplicationSetReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MulticlusterApplicationSetReport `json:"items"`
}

// AppConditions is the report of one ApplicationSet across all clusters.
type AppConditions struct {
	// Resources is the union, across clusters, of the resources the Applications deploy.
	// +optional
	Resources []ResourceRef `json:"resources,omitempty"`

	// ClusterConditions has one entry per cluster and Application while the
	// ApplicationSet has at most ListAllEntriesUpTo (100) of them. Beyond that it lists
	// the entries that need attention (not Healthy, not Synced, agent not available, any
	// condition, failing resource or not-healthy child, hub-rendered, or not reported yet),
	// and truncation.unlistedClusterConditions counts the others: each of those is its
	// cluster's ApplicationStatusReport, labelled
	// apps.open-cluster-management.io/report-applicationset=<namespace>.<name>. A
	// status change of a cluster that needs no attention then leaves this object as it
	// is, so the cost of a change on the hub does not grow with the fleet.
	// +optional
	ClusterConditions []ClusterCondition `json:"clusterConditions,omitempty"`

	// Summary counts clusters by state.
	// +optional
	Summary ReportSummary `json:"summary,omitempty"`

	// Truncation is set when the report left out or shortened content to stay within its
	// size bounds (about 1 MiB for any number of clusters), did not list the clusters that
	// need no attention (more than 100 entries), or when the agents' reports it is built
	// from left out resources. The summary always counts every cluster.
	// +optional
	Truncation *ReportTruncation `json:"truncation,omitempty"`
}

// ReportTruncation records what a MulticlusterApplicationSetReport left out to stay small,
// and what the agents' reports it is built from left out.
type ReportTruncation struct {
	// OmittedResources is how many resources were left out of statuses.resources.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedResources int32 `json:"omittedResources,omitempty"`

	// AgentOmittedResources is how many resources the agents' ApplicationStatusReports
	// left out (at most 1,000 per Application and cluster; each report's
	// status.truncation counts its own), summed over the clusters: statuses.resources,
	// their union, can miss up to that many.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AgentOmittedResources int32 `json:"agentOmittedResources,omitempty"`

	// OmittedConditions is how many conditions were left out of cluster entries.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedConditions int32 `json:"omittedConditions,omitempty"`

	// OmittedFailingResources is how many failing resources and not-healthy children
	// were left out of cluster entries.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedFailingResources int32 `json:"omittedFailingResources,omitempty"`

	// OmittedClusterConditions is how many cluster entries were left out because even
	// without details they did not fit; healthy and synced entries go first.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedClusterConditions int32 `json:"omittedClusterConditions,omitempty"`

	// TerseClusterConditions is how many cluster entries were written without
	// lastReportedAt, without agentAvailable when it was true and without delivery when
	// it was Pull; entries that need no attention (healthy, synced, agent available or
	// no agent needed) go first.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TerseClusterConditions int32 `json:"terseClusterConditions,omitempty"`

	// UnlistedClusterConditions is how many entries clusterConditions does not list
	// because the ApplicationSet has more than 100 entries and they need no attention:
	// Healthy, Synced, the agent available, no conditions, reported by the agent. The
	// summary counts them; each one's detail is its cluster's ApplicationStatusReport
	// (kubectl get applicationstatusreports -A -l
	// apps.open-cluster-management.io/report-applicationset=<namespace>.<name>).
	// +optional
	// +kubebuilder:validation:Minimum=0
	UnlistedClusterConditions int32 `json:"unlistedClusterConditions,omitempty"`

	// ShortenedMessages is how many messages were cut.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ShortenedMessages int32 `json:"shortenedMessages,omitempty"`

	// Message says in words what was left out and why.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceRef identifies a resource deployed by an Application.
type ResourceRef struct {
	// APIVersion of the resource, "group/version" or "version" for the core group.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the resource; empty for cluster-scoped resources.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Condition is an error or warning of an Application on one cluster.
type Condition struct {
	// Type is the Argo CD condition type, e.g. SyncError, ComparisonError, OperationError
	// or a warning type.
	// +optional
	Type string `json:"type,omitempty"`

	// Message says what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterCondition is the state of one Application on one cluster.
type ClusterCondition struct {
	// Cluster is the managed cluster's name.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// SyncStatus is the Argo CD sync status: Synced, OutOfSync or Unknown.
	// +optional
	SyncStatus string `json:"syncStatus,omitempty"`
	// HealthStatus is the Argo CD health status: Healthy, Progressing, Degraded,
	// Suspended, Missing or Unknown.
	// +optional
	HealthStatus string `json:"healthStatus,omitempty"`
	// App is "<appset namespace>/<hub application name>/<ManifestWork namespace>/<ManifestWork name>".
	// An Application the hub refused to deliver has an entry too: its target cluster, the
	// name its ManifestWork would have, no sync or health, and the hub's conditions saying why.
	// +optional
	App string `json:"app,omitempty"`
	// OperationStatePhase is the phase of the last sync operation.
	// +optional
	OperationStatePhase string `json:"operationStatePhase,omitempty"`
	// OperationStateStartedAt is when the last sync operation started (RFC 3339).
	// +optional
	OperationStateStartedAt string `json:"operationStateStartedAt,omitempty"`
	// SyncRevision is the revision the Application is synced to.
	// +optional
	SyncRevision string `json:"syncRevision,omitempty"`
	// SyncRevisions are the revisions a multi-source Application is synced to, one per
	// source (Argo CD's status.sync.revisions), from the agent's report.
	// +optional
	SyncRevisions []string `json:"syncRevisions,omitempty"`
	// Conditions are the Application's errors and warnings on this cluster, errors
	// first. The hub's own conditions of the hub Application say what keeps it from
	// running before or without any report from the cluster (InvalidSpecError,
	// DeliveryError, ClusterApplyError, NotReportedError; their messages start with
	// "argocd-pull: "). When the cluster's agent is not available, a condition of type
	// AgentUnavailable says since when, and that the details may be stale.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`

	// FailingResources are some of the Application's resources on this cluster that are
	// not Synced or not Healthy, the most severe first (at most a few; Truncation counts
	// the rest).
	// +optional
	FailingResources []FailingResource `json:"failingResources,omitempty"`

	// NotHealthyChildren are some of the children in the Application's resource tree on
	// this cluster (ReplicaSets, Pods, ...) that are not Healthy, the most severe first,
	// each naming the Application's resource it belongs to: what explains a Progressing
	// or Degraded resource. From the agent's report when it read Argo CD's resource tree.
	// Truncation counts those left out with the failing resources.
	// +optional
	NotHealthyChildren []FailingResource `json:"notHealthyChildren,omitempty"`

	// Stale is true when conditions, failing resources and children come from the last
	// report of an agent that is not available now: they are what it observed at
	// lastReportedAt.
	// +optional
	Stale bool `json:"stale,omitempty"`

	// AgentAvailable tells whether the cluster's argocd-pull agent is available (its
	// ManagedClusterAddOn's Available condition is True). When it is not, sync and health
	// still come from the ManifestWork's status feedback, but conditions and failing
	// resources are the agent's last report and may be stale. Unset when unknown, and
	// for HubRendered delivery, which has no agent.
	// +optional
	AgentAvailable *bool `json:"agentAvailable,omitempty"`

	// LastReportedAt is when the agent last observed the Application on this cluster;
	// unset when the agent has not reported it.
	// +optional
	LastReportedAt *metav1.Time `json:"lastReportedAt,omitempty"`

	// Delivery is how the Application reaches the cluster. Pull: the hub Application is
	// delivered to the cluster's own Argo CD, and the argocd-pull agent reports its state.
	// HubRendered: the hub's Argo CD renders the manifests into a ManifestWork (the
	// ocm-manifestwork Config Management Plugin) that OCM's work agent applies; sync and
	// health are the hub Application's, resources and failures come from the
	// ManifestWork's status, and there is no agent (agentAvailable is unset). Unset means
	// Pull: reports written before this field existed, and terse entries (see Truncation).
	// +optional
	Delivery DeliveryMode `json:"delivery,omitempty"`
}

// ListAllEntriesUpTo is how many entries a MulticlusterApplicationSetReport lists in
// full: beyond it, it lists only those that need attention (see ClusterConditions).
const ListAllEntriesUpTo = 100

// DeliveryMode is how an Application reaches its cluster.
// +kubebuilder:validation:Enum=Pull;HubRendered
type DeliveryMode string

// Delivery modes.
const (
	// DeliveryPull: the cluster's Argo CD pulls the Application (the pull model).
	DeliveryPull DeliveryMode = "Pull"
	// DeliveryHubRendered: the hub's Argo CD renders the manifests and OCM applies them.
	DeliveryHubRendered DeliveryMode = "HubRendered"
)

// Condition types the hub adds to a cluster entry, next to Argo CD's own.
const (
	// ConditionAgentUnavailable: the cluster's argocd-pull agent is not available; the
	// message says since when. Details may be stale.
	ConditionAgentUnavailable = "AgentUnavailable"
	// ConditionManifestWorkNotApplied: a hub-rendered Application's ManifestWork is not
	// applied on the cluster (its Applied condition is False); the message carries each
	// failing manifest's own message.
	ConditionManifestWorkNotApplied = "ManifestWorkNotApplied"
	// ConditionManifestWorkNotAvailable: some resources of a hub-rendered Application's
	// ManifestWork do not exist on the cluster (its Available condition is False).
	ConditionManifestWorkNotAvailable = "ManifestWorkNotAvailable"
	// ConditionOperationFailed: the Application's last sync operation failed or errored.
	// Argo CD keeps the reason in the operation's message, not in a condition; a reader of
	// the report needs it next to the others.
	ConditionOperationFailed = "OperationFailed"
)

// FailingResource is a resource of an Application that is not Synced or not Healthy.
type FailingResource struct {
	// APIVersion of the resource, "group/version" or "version" for the core group.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the resource; empty for cluster-scoped resources.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// SyncStatus is the resource's sync status.
	// +optional
	SyncStatus string `json:"syncStatus,omitempty"`
	// HealthStatus is the resource's health status.
	// +optional
	HealthStatus string `json:"healthStatus,omitempty"`
	// Message is the resource's health message, shortened.
	// +optional
	Message string `json:"message,omitempty"`
	// Parent is, for a child in the resource tree, the Application's resource it belongs
	// to, "Kind/name"; unset for the Application's own resources.
	// +optional
	Parent string `json:"parent,omitempty"`
}

// ReportSummary counts the clusters an ApplicationSet's Applications were pulled to, and
// how many are synced, not synced, healthy, not healthy and in progress, and the clusters
// whose agent is not available. The counts are
// decimal strings. An Application that is Progressing counts as inProgress and as
// notHealthy; any status other than Healthy (or Synced), Unknown included, counts as not.
type ReportSummary struct {
	// Synced is the number of Synced Applications.
	// +optional
	Synced string `json:"synced"`

	// NotSynced is the number of Applications that are not Synced.
	// +optional
	NotSynced string `json:"notSynced"`

	// Healthy is the number of Healthy Applications.
	// +optional
	Healthy string `json:"healthy"`

	// NotHealthy is the number of Applications that are not Healthy.
	// +optional
	NotHealthy string `json:"notHealthy"`

	// InProgress is the number of Progressing Applications.
	// +optional
	InProgress string `json:"inProgress"`

	// Clusters is the number of clusters the Applications were pulled to.
	// +optional
	Clusters string `json:"clusters"`

	// AgentsUnavailable is the number of clusters whose argocd-pull agent is not
	// available (entries with agentAvailable false: the lease ran out, or the addon is
	// not enabled there): what their entries say beyond sync and health may be stale.
	// Unset in reports written before this field existed.
	// +optional
	AgentsUnavailable string `json:"agentsUnavailable,omitempty"`
}

func init() {
	SchemeBuilder.Register(&MulticlusterApplicationSetReport{}, &MulticlusterApplicationSetReportList{})
}
