package resourcetree

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the reason label of treeFailures.
const (
	failureRedis  = "redis"
	failureDecode = "decode"
)

// The controller's metrics (docs/metrics.md).
var (
	treesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_resource_trees_written_total",
		Help: "Resource trees written into the hub Argo CD's Redis: a new or changed tree of a pulled hub Application.",
	})
	treesDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_resource_trees_deleted_total",
		Help: "Resource tree keys deleted from the hub Argo CD's Redis: the tree or the hub Application went, or the Application is no longer pulled to the tree's cluster " +
			"(after a restart, once for each pulled Application without a tree, whose key the manager cannot know is absent).",
	})
	treeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "argocd_pull_resource_tree_failures_total",
		Help: "Resource trees not written or deleted, by reason: redis (the hub Argo CD's Redis refused or could not be reached; retried with backoff), " +
			"decode (the ApplicationResourceTree does not hold a valid tree; its next change tries again).",
	}, []string{"reason"})
	treeBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "argocd_pull_resource_tree_written_bytes_total",
		Help: "Compressed bytes of the resource trees written into the hub Argo CD's Redis, as the ApplicationResourceTrees carry them.",
	})
)

func init() {
	metrics.Registry.MustRegister(treesWritten, treesDeleted, treeFailures, treeBytes)
	for _, reason := range []string{failureRedis, failureDecode} {
		treeFailures.WithLabelValues(reason)
	}
}
