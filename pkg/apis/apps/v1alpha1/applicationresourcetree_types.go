package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of an ApplicationResourceTree. The agent keeps at most MaxTreeNodes nodes and at
// most MaxTreeCompressedBytes of compressed tree, dropping nodes (deepest first) until it
// fits and saying how many in OmittedNodes. The kubebuilder markers below repeat these
// numbers: change both together.
const (
	// MaxTreeNodes bounds the nodes of one tree.
	MaxTreeNodes = 2000
	// MaxTreeCompressedBytes bounds the compressed tree: 524288 characters once base64
	// encoded (the schema's bound), far below the API server's object limit.
	MaxTreeCompressedBytes = 384 * 1024
)

// ApplicationResourceTree is Argo CD's resource tree of one pulled Application on a
// managed cluster (every resource it manages and their children, each with its health),
// as the cluster's argocd-pull agent last read it from the cluster's Argo CD. The hub
// writes it into the hub Argo CD's cache, so the hub's Argo CD UI and CLI show the tree of
// the hub Application.
//
// There is one per Application per cluster, next to its ApplicationStatusReport (same
// namespace, same name). The agent writes it only when the tree changed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=apptree;apptrees,categories=ocm;argocd-pull
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.source.hubApplicationName`,description="The hub Application this Application was pulled from"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.tree.nodes`,description="Nodes the tree carries"
// +kubebuilder:printcolumn:name="Omitted",type=integer,JSONPath=`.tree.omittedNodes`,description="Nodes left out to keep the tree within its bounds"
// +kubebuilder:printcolumn:name="Observed",type=date,JSONPath=`.tree.observedAt`,description="When the agent read the tree"
type ApplicationResourceTree struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Source identifies the Application on the managed cluster and where it came from,
	// as in its ApplicationStatusReport.
	// +required
	Source ApplicationReportSource `json:"source"`

	// Tree is the resource tree.
	// +required
	Tree ResourceTreeData `json:"tree"`
}

// ResourceTreeData is one read of an Application's resource tree.
type ResourceTreeData struct {
	// Digest is the SHA-256 (hex) of the tree's JSON before compression: equal digests,
	// equal trees.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	Digest string `json:"digest"`

	// Nodes is how many nodes Compressed carries (orphaned nodes included).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	Nodes int32 `json:"nodes,omitempty"`

	// OmittedNodes is how many nodes of the tree were left out to keep it within its
	// bounds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedNodes int32 `json:"omittedNodes,omitempty"`

	// Compressed is the tree as Argo CD keeps it (the JSON of its ApplicationTree),
	// gzip-compressed.
	// +required
	// +kubebuilder:validation:MaxLength=524288
	Compressed []byte `json:"compressed"`

	// ObservedAt is when the agent read the tree.
	// +required
	ObservedAt metav1.Time `json:"observedAt"`
}

// ApplicationResourceTreeList contains a list of ApplicationResourceTrees.
//
// +kubebuilder:object:root=true
type ApplicationResourceTreeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationResourceTree `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ApplicationResourceTree{}, &ApplicationResourceTreeList{})
}
