package addon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// AgentReportQuotaName names the ResourceQuota that bounds the ApplicationStatusReports
// and ApplicationResourceTrees in a cluster's namespace.
const AgentReportQuotaName = "argocd-pull-agent-reports"

// DefaultAgentReportQuota is --agent-report-quota's default: far above the Applications
// one cluster's Argo CD usually runs, far below what would strain the hub's etcd.
const DefaultAgentReportQuota = 1000

// ReportCountResource is the object-count quota resource of ApplicationStatusReports,
// TreeCountResource that of ApplicationResourceTrees.
var (
	ReportCountResource = corev1.ResourceName("count/applicationstatusreports." + appsv1alpha1.GroupVersion.Group)
	TreeCountResource   = corev1.ResourceName("count/applicationresourcetrees." + appsv1alpha1.GroupVersion.Group)
)

// AgentReportQuota is the ResourceQuota of cluster's namespace that lets at most limit
// ApplicationStatusReports, and as many ApplicationResourceTrees, exist there. The agent
// writes one of each per pulled Application, but whoever holds a cluster's agent
// credentials (or can create Applications carrying the pull annotations on that cluster)
// could otherwise fill the hub's etcd with them; a tree can take up to
// MaxTreeCompressedBytes.
func AgentReportQuota(cluster string, addon *addonv1alpha1.ManagedClusterAddOn, limit int) *corev1.ResourceQuota {
	meta := agentHubObjectMeta(cluster, addon)
	meta.Name = AgentReportQuotaName
	return &corev1.ResourceQuota{
		ObjectMeta: meta,
		Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{
				ReportCountResource: *resource.NewQuantity(int64(limit), resource.DecimalSI),
				TreeCountResource:   *resource.NewQuantity(int64(limit), resource.DecimalSI),
			},
		},
	}
}

// applyAgentReportQuota creates or updates the quota so that its spec is desired's.
func applyAgentReportQuota(ctx context.Context, kubeClient kubernetes.Interface, desired *corev1.ResourceQuota) error {
	quotas := kubeClient.CoreV1().ResourceQuotas(desired.Namespace)
	current, err := quotas.Get(ctx, desired.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = quotas.Create(ctx, desired, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(current.Spec, desired.Spec) {
		return nil
	}
	current.Spec = desired.Spec
	if _, err := quotas.Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating: %w", err)
	}
	return nil
}
