// Package apps holds the wire contract of the pull model: the labels and
// annotations that hub Applications, their ManifestWorks and the payload delivered to the
// managed cluster carry. The hub controllers and the agent read and write them; keep the
// strings exactly, other tools depend on them.
package apps

// Hub Application selection.
const (
	// LabelPullToOCMManagedCluster marks a hub Application (and its ManifestWork) for the
	// pull model; its value must parse as a boolean.
	LabelPullToOCMManagedCluster = "apps.open-cluster-management.io/pull-to-ocm-managed-cluster"
	// AnnotationOCMManagedCluster names the target managed cluster, which is also the
	// ManifestWork's namespace.
	AnnotationOCMManagedCluster = "apps.open-cluster-management.io/ocm-managed-cluster"
	// AnnotationOCMManagedClusterAppNamespace is the namespace of the Application on the
	// managed cluster.
	AnnotationOCMManagedClusterAppNamespace = "apps.open-cluster-management.io/ocm-managed-cluster-app-namespace"
	// AnnotationDestinationName overrides the payload's spec.destination.name.
	AnnotationDestinationName = "apps.open-cluster-management.io/destination-name"
	// AnnotationDestinationServer overrides the payload's spec.destination.server.
	AnnotationDestinationServer = "apps.open-cluster-management.io/destination-server"
	// AnnotationSkipReconcile makes the hub's Argo CD leave a marked Application alone.
	AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
	// AnnotationRefresh asks Argo CD to refresh an Application; the spoke removes it once done.
	AnnotationRefresh = "argocd.argoproj.io/refresh"
)

// ManifestWork and payload.
const (
	// LabelApplicationSet is "true" on ManifestWorks of Applications owned by an ApplicationSet.
	LabelApplicationSet = "apps.open-cluster-management.io/application-set"
	// AnnotationHubApplicationNamespace and AnnotationHubApplicationName name the hub
	// Application on its ManifestWork and on the payload, so the agent can tell pulled
	// Applications from ones created on the spoke.
	AnnotationHubApplicationNamespace = "apps.open-cluster-management.io/hub-application-namespace"
	AnnotationHubApplicationName      = "apps.open-cluster-management.io/hub-application-name"
	// AnnotationHostingApplicationSet is "<namespace>/<name>" of the owning ApplicationSet.
	// The same key labels a MulticlusterApplicationSetReport.
	AnnotationHostingApplicationSet = "apps.open-cluster-management.io/hosting-applicationset"
)
