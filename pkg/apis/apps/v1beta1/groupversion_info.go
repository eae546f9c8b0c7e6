// Package v1beta1 holds the v1beta1 API of group apps.open-cluster-management.io:
// GitOpsCluster, which connects an OCM Placement to an Argo CD instance.
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
