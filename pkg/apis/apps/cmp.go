package apps

// Hub-rendered delivery: the Config Management Plugin (`argocd-pull-addon cmp generate`)
// wraps the manifests the hub's Argo CD rendered into one ManifestWork, which the hub's
// Argo CD then applies into the target cluster's namespace. Such a ManifestWork carries
// AnnotationHubApplicationNamespace/AnnotationHubApplicationName like a pull-model one,
// but never LabelPullToOCMManagedCluster: the propagation controller owns every work with
// that label and would delete one it did not build.
const (
	// LabelHubRendered is "true" on a ManifestWork the CMP built: its manifests were
	// rendered by the hub's Argo CD, and no Argo CD runs for it on the managed cluster.
	LabelHubRendered = "apps.open-cluster-management.io/hub-rendered"

	// AnnotationSourceRevision is the Git revision (or Helm chart version) the hub's Argo
	// CD rendered the manifests from, ARGOCD_APP_REVISION at generation time.
	AnnotationSourceRevision = "apps.open-cluster-management.io/source-revision"
)
