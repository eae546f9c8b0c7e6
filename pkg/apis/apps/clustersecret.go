package apps

// The Argo CD cluster Secrets a GitOpsCluster registers in the hub Argo CD's namespace:
// written by the GitOpsCluster controller, read by propagation's project check (the target
// cluster as Argo CD names it). Argo CD and existing ApplicationSets select on these
// labels; keep them exactly.
const (
	// LabelArgoSecretType is Argo CD's label of its cluster and repository Secrets.
	LabelArgoSecretType = "argocd.argoproj.io/secret-type"
	// ArgoSecretTypeCluster is LabelArgoSecretType's value on a cluster Secret.
	ArgoSecretTypeCluster = "cluster"
	// LabelManagedBy marks every object the GitOpsCluster controller creates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "argocd-pull-addon"
)

// ClusterSecretName is the name of the Argo CD cluster Secret of cluster: the name earlier
// GitOpsCluster controllers used, so Argo CD sees the same cluster objects.
func ClusterSecretName(cluster string) string { return cluster + "-cluster-secret" }

// PlaceholderServer is the server URL of the pull model's blank cluster Secrets. The hub
// never connects to it: Argo CD needs a unique, well-formed server per cluster, and the
// Applications it renders are rewritten to the spoke's https://kubernetes.default.svc by
// propagation. "https://<cluster>-control-plane" is what earlier pull-model installs used.
func PlaceholderServer(cluster string) string { return "https://" + cluster + "-control-plane" }
