package fleet

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetricsReaderNamespace and MetricsReaderServiceAccount name the ServiceAccount that
// scrapes the manager's metrics: the chart binds its <release>-metrics-reader ClusterRole
// to it (metrics.reader.serviceAccount), as docs/metrics.md tells a Prometheus' to be.
const (
	MetricsReaderNamespace      = "monitoring"
	MetricsReaderServiceAccount = "prometheus"
)

// withMetricsReader is values with metrics.reader.serviceAccount naming the fleet's
// metrics reader, unless the caller names one; values itself is not changed.
func withMetricsReader(values map[string]any) map[string]any {
	out := maps.Clone(values)
	if out == nil {
		out = map[string]any{}
	}
	metrics, _ := out["metrics"].(map[string]any)
	metrics = maps.Clone(metrics)
	if metrics == nil {
		metrics = map[string]any{}
	}
	if _, set := metrics["reader"]; !set {
		metrics["reader"] = map[string]any{"serviceAccount": map[string]any{
			"name": MetricsReaderServiceAccount, "namespace": MetricsReaderNamespace}}
	}
	out["metrics"] = metrics
	return out
}

// metricsReaderToken is a token of the fleet's metrics reader, which the chart binds to
// its <release>-metrics-reader ClusterRole (withMetricsReader).
func metricsReaderToken(ctx context.Context, cp *ControlPlane) (string, error) {
	const namespace, name = MetricsReaderNamespace, MetricsReaderServiceAccount
	c := cp.APIServer.Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
	} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating %T %s for scraping the manager's metrics: %w", o, o.GetName(), err)
		}
	}
	return cp.ServiceAccountToken(ctx, namespace, name)
}
