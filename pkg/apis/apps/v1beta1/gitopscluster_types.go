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
// +kubebuilder:resource:scope=Namespaced,shortName=gitopsclusters;gitopscluster
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placementRef.name`,description="The Placement whose decisions become Argo CD clusters"
// +kubebuilder:printcolumn:name="Argo CD Namespace",type=string,JSONPath=`.spec.argoServer.argoNamespace`,description="Namespace of the Argo CD instance"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="successful or failed"
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

	// Conditions are the standard conditions of the GitOpsCluster.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func init() {
	SchemeBuilder.Register(&GitOpsCluster{}, &GitOpsClusterList{})
}
