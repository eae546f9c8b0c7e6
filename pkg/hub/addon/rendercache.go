package addon

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// RenderCache renders the agent chart once per cluster and set of rendering inputs.
//
// addon-framework asks for the agent's manifests on every sync of a cluster's addon, and
// its informers resync every addon periodically: on a large fleet rendering the same Helm
// chart into the same objects again dominated the manager's CPU profile
// (docs/benchmarks.md, "What the figures decided"). The objects depend only
// on what renderInputs collects, so an unchanged fingerprint returns a copy of the last
// rendering.
type RenderCache struct {
	agent.AgentAddon

	mu sync.Mutex
	// byCluster holds the last successful rendering of each cluster's agent. Failures are
	// not kept: the AddOnDeploymentConfig that failed may be fixed without any input here
	// changing.
	byCluster map[string]rendering
	// forgotten is the UID of each cluster's last deleted ManagedClusterAddOn: the
	// framework's controllers may still render from a lister that has not seen the
	// deletion, and such a rendering must not be kept again after Forget.
	forgotten map[string]types.UID
}

type rendering struct {
	inputs  [sha256.Size]byte
	objects []runtime.Object
}

var _ agent.AgentAddon = &RenderCache{}

// NewRenderCache wraps agentAddon, whose Manifests must depend only on renderInputs.
func NewRenderCache(agentAddon agent.AgentAddon) *RenderCache {
	return &RenderCache{AgentAddon: agentAddon, byCluster: map[string]rendering{}, forgotten: map[string]types.UID{}}
}

// Manifests returns the agent's objects for cluster, rendering them only when an input
// changed. The framework builds ManifestWorks from the objects it gets, so every caller
// gets its own copies.
func (c *RenderCache) Manifests(cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	inputs, err := renderInputs(cluster, addon)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	last, ok := c.byCluster[cluster.Name]
	c.mu.Unlock()
	if ok && last.inputs == inputs {
		return deepCopies(last.objects), nil
	}

	objects, err := c.AgentAddon.Manifests(cluster, addon)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gone, ok := c.forgotten[cluster.Name]; addon.DeletionTimestamp != nil || (ok && gone == addon.UID) {
		return objects, nil
	}
	delete(c.forgotten, cluster.Name)
	c.byCluster[cluster.Name] = rendering{inputs: inputs, objects: deepCopies(objects)}
	return objects, nil
}

// Forget drops the cluster's rendering: its addon, addonUID, was disabled or the cluster
// left. A late rendering for that addon is not kept.
func (c *RenderCache) Forget(cluster string, addonUID types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byCluster, cluster)
	c.forgotten[cluster] = addonUID
}

// Cached tells whether a rendering of cluster's agent is kept.
func (c *RenderCache) Cached(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byCluster[cluster]
	return ok
}

// renderInputs fingerprints everything addon-framework's Helm addon and our value
// functions read from the cluster and the addon:
//   - the cluster's name (clusterName), annotations (image registries, hosted mode),
//     labels, and Kubernetes version (the chart's Capabilities.KubeVersion);
//   - the addon's name, annotations (hosted mode), spec (install namespace, configs) and
//     status.configReferences: the AddOnDeploymentConfig read for the values is the
//     desired config named there, and OCM's addon manager changes its specHash with
//     every change of the config's spec.
//
// Status conditions, the lease health and resourceVersions are left out: they change all
// the time and render nothing.
func renderInputs(cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn) ([sha256.Size]byte, error) {
	in := struct {
		Cluster            string                                `json:"cluster"`
		ClusterLabels      map[string]string                     `json:"clusterLabels,omitempty"`
		ClusterAnnotations map[string]string                     `json:"clusterAnnotations,omitempty"`
		KubeVersion        string                                `json:"kubeVersion,omitempty"`
		Addon              string                                `json:"addon"`
		AddonAnnotations   map[string]string                     `json:"addonAnnotations,omitempty"`
		AddonSpec          addonv1alpha1.ManagedClusterAddOnSpec `json:"addonSpec"`
		ConfigReferences   []addonv1alpha1.ConfigReference       `json:"configReferences,omitempty"`
	}{
		Cluster:            cluster.Name,
		ClusterLabels:      cluster.Labels,
		ClusterAnnotations: cluster.Annotations,
		KubeVersion:        cluster.Status.Version.Kubernetes,
		Addon:              addon.Name,
		AddonAnnotations:   addon.Annotations,
		AddonSpec:          addon.Spec,
		ConfigReferences:   addon.Status.ConfigReferences,
	}
	// encoding/json sorts map keys, so equal inputs give equal bytes.
	b, err := json.Marshal(in)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("fingerprinting the agent's rendering inputs of cluster %s: %w", cluster.Name, err)
	}
	return sha256.Sum256(b), nil
}

func deepCopies(objects []runtime.Object) []runtime.Object {
	copies := make([]runtime.Object, len(objects))
	for i, o := range objects {
		copies[i] = o.DeepCopyObject()
	}
	return copies
}
