package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitOpsCluster connects an OCM Placement to an Argo CD instance: every cluster the
// Placement decides on becomes an Argo CD cluster Secret in the Argo CD namespace, so an
// ApplicationSet with the OCM placement generator can target it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gitopsclusters;gitopscluster;goc,categories=ocm;argocd-pull
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placementRef.name`,description="The Placement whose decisions become Argo CD clusters"
// +kubebuilder:printcolumn:name="Argo CD Namespace",type=string,JSONPath=`.spec.argoServer.argoNamespace`,description="Namespace of the Argo CD instance"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="successful or failed"
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusterCount`,description="Decided clusters registered with Argo CD"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which Placement feeds which Argo CD instance.
	// +required
	Spec GitOpsClusterSpec `json:"spec"`

	// Status is the outcome of the last reconcile.
	// +optional
	Status GitOpsClusterStatus `json:"status,omitempty"`
}

// GitOpsClusterList contains a list of GitOpsClusters.
//
// +kubebuilder:object:root=true
type GitOpsClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsCluster `json:"items"`
}

// GitOpsClusterSpec is the desired state of a GitOpsCluster.
type GitOpsClusterSpec struct {
	// ArgoServer is the Argo CD instance the clusters are registered with.
	// +required
	ArgoServer ArgoServerSpec `json:"argoServer"`

	// PlacementRef is the Placement whose decisions are registered. It must be a
	// cluster.open-cluster-management.io Placement in the GitOpsCluster's namespace.
	// +required
	PlacementRef *corev1.ObjectReference `json:"placementRef"`

	// CreateBlankClusterSecrets makes the cluster Secrets carry no credentials, only the
	// cluster's name and a placeholder server: the pull model, where the hub never
	// reaches the clusters.
	// +optional
	CreateBlankClusterSecrets *bool `json:"createBlankClusterSecrets,omitempty"`
}

// ArgoServerSpec names an Argo CD instance.
type ArgoServerSpec struct {
	// Cluster is kept for compatibility with older GitOpsClusters; the Argo CD instance
	// always runs on the hub.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// ArgoNamespace is the namespace Argo CD runs in on the hub.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ArgoNamespace string `json:"argoNamespace"`
}

// Phase values of a GitOpsCluster.
const (
	PhaseSuccessful = "successful"
	PhaseFailed     = "failed"
)

// Condition types of a GitOpsCluster. Each says whether one part of the reconcile
// succeeded; Ready sums them up and carries the reason of the first one that did not.
const (
	// ConditionReady is True when every other condition is True: the Argo CD cluster
	// Secrets match the Placement's decisions and the generator configuration is in place.
	ConditionReady = "Ready"
	// ConditionPlacementResolved is True when spec.placementRef names an existing
	// cluster.open-cluster-management.io Placement in the GitOpsCluster's namespace.
	ConditionPlacementResolved = "PlacementResolved"
	// ConditionArgoNamespaceFound is True when spec.argoServer.argoNamespace exists and is
	// one the manager may write to.
	ConditionArgoNamespaceFound = "ArgoNamespaceFound"
	// ConditionClusterSecretsSynced is True when there is one Argo CD cluster Secret per
	// decided cluster in the Argo CD namespace and none for clusters that left.
	ConditionClusterSecretsSynced = "ClusterSecretsSynced"
	// ConditionGeneratorConfigured is True when the placement generator ConfigMaps and
	// the ApplicationSet controller's Role and RoleBinding are in place.
	ConditionGeneratorConfigured = "GeneratorConfigured"
)

// Condition reasons of a GitOpsCluster.
const (
	// ReasonReady: everything is in place (Ready).
	ReasonReady = "Ready"

	// ReasonPlacementResolved: the Placement exists (PlacementResolved).
	ReasonPlacementResolved = "PlacementResolved"
	// ReasonInvalidPlacementRef: spec.placementRef is missing, has no name, or is not a
	// cluster.open-cluster-management.io Placement (PlacementResolved).
	ReasonInvalidPlacementRef = "InvalidPlacementRef"
	// ReasonPlacementNamespaceMismatch: spec.placementRef names another namespace than
	// the GitOpsCluster's (PlacementResolved).
	ReasonPlacementNamespaceMismatch = "PlacementNamespaceMismatch"
	// ReasonPlacementNotFound: the referenced Placement does not exist (PlacementResolved).
	ReasonPlacementNotFound = "PlacementNotFound"

	// ReasonArgoNamespaceFound: the Argo CD namespace exists (ArgoNamespaceFound).
	ReasonArgoNamespaceFound = "ArgoNamespaceFound"
	// ReasonArgoNamespaceNotFound: the Argo CD namespace does not exist (ArgoNamespaceFound).
	ReasonArgoNamespaceNotFound = "ArgoNamespaceNotFound"
	// ReasonArgoNamespaceNotAllowed: the Argo CD namespace is not one the manager is
	// installed to write to (the chart's rbac.argoNamespaces); nothing is written
	// (ArgoNamespaceFound).
	ReasonArgoNamespaceNotAllowed = "ArgoNamespaceNotAllowed"

	// ReasonClusterSecretsSynced: the cluster Secrets match the decisions (ClusterSecretsSynced).
	ReasonClusterSecretsSynced = "ClusterSecretsSynced"
	// ReasonBlankClusterSecretsImplied: as ClusterSecretsSynced, but spec.createBlankClusterSecrets
	// is not true. The hub of the pull model holds no cluster credentials, so the Secrets
	// are blank (name and placeholder server) either way; the reason says so (ClusterSecretsSynced).
	ReasonBlankClusterSecretsImplied = "BlankClusterSecretsImplied"
	// ReasonClusterSecretConflict: a Secret no GitOpsCluster created already has the name
	// of a cluster Secret; it is left alone and that cluster is not registered
	// (ClusterSecretsSynced). GitOpsClusters selecting the same cluster share its Secret.
	ReasonClusterSecretConflict = "ClusterSecretConflict"
	// ReasonClusterSecretsFailed: writing the cluster Secrets failed; retried (ClusterSecretsSynced).
	ReasonClusterSecretsFailed = "ClusterSecretsFailed"

	// ReasonGeneratorConfigured: ConfigMaps, Role and RoleBinding are in place (GeneratorConfigured).
	ReasonGeneratorConfigured = "GeneratorConfigured"
	// ReasonGeneratorConfigFailed: writing them failed; retried (GeneratorConfigured).
	ReasonGeneratorConfigFailed = "GeneratorConfigFailed"
	// ReasonGeneratorConfigConflict: a ConfigMap, Role or RoleBinding of the generator
	// configuration exists without the label of objects GitOpsClusters write, and is left
	// alone (GeneratorConfigured).
	ReasonGeneratorConfigConflict = "GeneratorConfigConflict"

	// ReasonWaitingForPrerequisites: not attempted because the Placement or the Argo CD
	// namespace is not resolved (ClusterSecretsSynced, GeneratorConfigured).
	ReasonWaitingForPrerequisites = "WaitingForPrerequisites"
)

// GitOpsClusterStatus is the observed state of a GitOpsCluster.
type GitOpsClusterStatus struct {
	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

	// Phase is successful or failed.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Message says what happened in the last reconcile.
	// +optional
	Message string `json:"message,omitempty"`

	// ClusterCount is how many of the Placement's decided clusters have an Argo CD cluster
	// Secret, as of the last reconcile that got as far as writing them (kubectl's Clusters
	// column).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ClusterCount int32 `json:"clusterCount,omitempty"`

	// Conditions are the standard conditions of the GitOpsCluster.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func init() {
	SchemeBuilder.Register(&GitOpsCluster{}, &GitOpsClusterList{})
}

// GitOpsClusterFinalizer lets the gitopscluster controller release the cluster Secrets of
// a deleted GitOpsCluster, which live in another namespace than the GitOpsCluster's in
// general.
const GitOpsClusterFinalizer = "apps.open-cluster-management.io/gitopscluster-cleanup"
