// Package v1alpha1 holds the v1alpha1 API of group apps.open-cluster-management.io:
// MulticlusterApplicationSetReport (the hub's per-ApplicationSet roll-up) and
// ApplicationStatusReport (what an agent reports for one Application on its cluster).
//
// +kubebuilder:object:generate=true
// +groupName=apps.open-cluster-management.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.open-cluster-management.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
