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
	// AnnotationRefresh asks Argo CD to refresh an Application ("normal" or "hard"); Argo
	// CD removes it once done. On a hub Application it is a request the pull model
	// delivers once (AnnotationRefreshRequest) and then removes from the hub.
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

// Requests from the hub, delivered once. The payload never carries the hub Application's
// .operation or its refresh annotation: the work agent would re-apply them with every
// later change of the ManifestWork, and a sync would run again. It carries each as a
// request with an id instead; the agent on the cluster sets it on the spoke Application
// once per id, and the hub clears it once the ManifestWork's status feedback shows the id
// delivered. The values, and the protocol, are in pkg/contract/requests.
const (
	// AnnotationOperationRequest, on the payload, asks the agent to set .operation on the
	// spoke Application. Value: JSON requests.OperationRequest.
	AnnotationOperationRequest = "apps.open-cluster-management.io/operation-request"
	// AnnotationRefreshRequest, on the payload, asks the agent to set AnnotationRefresh on
	// the spoke Application. Value: JSON requests.RefreshRequest.
	AnnotationRefreshRequest = "apps.open-cluster-management.io/refresh-request"
	// AnnotationOperationDelivered, on the spoke Application, is the id of the last
	// operation request the agent set there, written in the same patch as .operation.
	AnnotationOperationDelivered = "apps.open-cluster-management.io/operation-delivered"
	// AnnotationRefreshDelivered, on the spoke Application, is the id of the last refresh
	// request the agent set there, written in the same patch as the refresh annotation.
	AnnotationRefreshDelivered = "apps.open-cluster-management.io/refresh-delivered"
)
