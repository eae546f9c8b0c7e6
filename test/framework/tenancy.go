package framework

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GlobalClusterSet is the ManagedClusterSet OCM creates on every hub, selecting every
// cluster (an empty label selector).
const GlobalClusterSet = "global"

// AllowEveryDelivery sets up, as a hub admin of a single-team hub would, what lets every
// pulled Application of namespace (Argo CD's own) reach every cluster under the
// propagation controller's default tenancy checks: an AppProject default allowing every
// repository and destination (what Argo CD creates at start), and the global ManagedClusterSet bound to namespace. There
// is no OCM controller on a bare API server: the set is created here and its binding is
// marked Bound as OCM's registration would. Existing objects are left as they are.
func AllowEveryDelivery(ctx context.Context, c client.Client, namespace string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace},
			Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"},
				Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}}}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: GlobalClusterSet},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return BindClusterSet(ctx, c, GlobalClusterSet, namespace)
}

// BindClusterSet binds ManagedClusterSet set to namespace and marks the binding Bound, as
// OCM's registration controller does once it checked the set exists.
func BindClusterSet(ctx context.Context, c client.Client, set, namespace string) error {
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: namespace},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	if err := c.Create(ctx, b); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("binding ManagedClusterSet %s to %s: %w", set, namespace, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
	}
	if meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType) {
		return nil
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: clusterv1beta2.ClusterSetBindingBoundType,
		Status: metav1.ConditionTrue, Reason: "ClusterSetBound", Message: "bound by the test"})
	if err := c.Status().Update(ctx, b); err != nil {
		return fmt.Errorf("marking the binding of %s to %s Bound: %w", set, namespace, err)
	}
	return nil
}
