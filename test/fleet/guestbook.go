package fleet

// The example the README walks through (examples/), as the e2e suite and the sandbox
// apply it: a Placement of the default ManagedClusterSet, a GitOpsCluster, and the
// guestbook ApplicationSet reading a local git repository.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// The guestbook: a ConfigMap and a Deployment, as argocd-example-apps' guestbook but with a
// ConfigMap instead of the Service.
const GuestbookYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: guestbook-ui
data:
  title: Guestbook from the hub
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - name: guestbook-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        ports:
        - containerPort: 80
`

// Names in examples/.
const (
	// GuestbookPath is the guestbook's path in its repository.
	GuestbookPath = "guestbook/guestbook.yaml"
	// GuestbookApplicationSet is the ApplicationSet of examples/applicationset-guestbook.yaml.
	GuestbookApplicationSet = "guestbook-app"
	// GuestbookPlacement is the Placement of examples/placement.yaml.
	GuestbookPlacement = "guestbook-app-placement"
	// GeneratorConfigMap is the duck-type ConfigMap the GitOpsCluster controller writes
	// for the ApplicationSet's clusterDecisionResource generator.
	GeneratorConfigMap = "ocm-placement-generator"
)

// NewGuestbookRepo creates the guestbook's git repository in dir.
func NewGuestbookRepo(dir string) (*LocalGitRepo, error) {
	return NewLocalGitRepo(dir, map[string]string{GuestbookPath: GuestbookYAML})
}

// ReadExample reads the one object of examples/file.
func ReadExample(file string) (*unstructured.Unstructured, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "examples", file))
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("examples/%s: %w", file, err)
	}
	return obj, nil
}

// DefaultClusterSetBindingExample binds the "default" ManagedClusterSet, which
// examples/placement.yaml selects from, to namespace argocd.
const DefaultClusterSetBindingExample = "managedclustersetbinding.yaml"

// BindDefaultClusterSet applies examples/managedclustersetbinding.yaml to namespace, as
// `clusteradm clusterset bind default --namespace ns` would create it, and waits for what
// that waits for: the binding bound and the set holding clusters.
// A real hub's registration webhook puts every new ManagedCluster into the default set
// (a label); the fleet runs OCM's controllers but no webhooks, so this labels clusters
// first.
func BindDefaultClusterSet(ctx context.Context, hub client.Client, namespace string, clusters []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, client.ObjectKey{Name: "default"}, &clusterv1beta2.ManagedClusterSet{})
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("waiting for the default ManagedClusterSet: %w", err)
	}
	for _, c := range clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Name: c}, mc); err != nil {
			return err
		}
		if mc.Labels[clusterv1beta2.ClusterSetLabel] != "" {
			continue
		}
		patch := client.MergeFrom(mc.DeepCopy())
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[clusterv1beta2.ClusterSetLabel] = "default"
		if err := hub.Patch(ctx, mc, patch); err != nil {
			return fmt.Errorf("adding %s to the default ManagedClusterSet: %w", c, err)
		}
	}
	binding, err := ReadExample(DefaultClusterSetBindingExample)
	if err != nil {
		return err
	}
	binding.SetNamespace(namespace)
	if err := hub.Create(ctx, binding); err != nil {
		return fmt.Errorf("binding the default ManagedClusterSet to %s (examples/%s): %w", namespace, DefaultClusterSetBindingExample, err)
	}
	var last string
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		b := &clusterv1beta2.ManagedClusterSetBinding{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "default"}, b); err != nil {
			return false, err
		}
		set := &clusterv1beta2.ManagedClusterSet{}
		if err := hub.Get(ctx, client.ObjectKey{Name: "default"}, set); err != nil {
			return false, err
		}
		last = fmt.Sprintf("binding %v, set %v", b.Status.Conditions, set.Status.Conditions)
		return meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType) &&
			meta.IsStatusConditionFalse(set.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty), nil
	}); err != nil {
		return fmt.Errorf("waiting for the default ManagedClusterSet to be bound and not empty (%s): %w", last, err)
	}
	return nil
}

// ApplyGuestbookExample applies examples/placement.yaml and gitopscluster.yaml, waits for
// the generator ConfigMap the GitOpsCluster writes (Argo CD's applicationset-controller
// retries a missing one only after 3 minutes), then applies
// examples/applicationset-guestbook.yaml with repoURL as its source.
func ApplyGuestbookExample(ctx context.Context, hub client.Client, repoURL string) error {
	for _, file := range []string{"placement.yaml", "gitopscluster.yaml"} {
		obj, err := ReadExample(file)
		if err != nil {
			return err
		}
		if err := hub.Create(ctx, obj); err != nil {
			return fmt.Errorf("applying examples/%s: %w", file, err)
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(waitCtx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := hub.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: GeneratorConfigMap}, &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		})
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("waiting for the GitOpsCluster's ConfigMap %s: %w", GeneratorConfigMap, err)
	}
	set, err := GuestbookApplicationSetFor(repoURL)
	if err != nil {
		return err
	}
	if err := hub.Create(ctx, set); err != nil {
		return fmt.Errorf("applying examples/applicationset-guestbook.yaml: %w", err)
	}
	return nil
}

// GuestbookApplicationSetFor is examples/applicationset-guestbook.yaml with repoURL as its
// source.
func GuestbookApplicationSetFor(repoURL string) (*unstructured.Unstructured, error) {
	set, err := ReadExample("applicationset-guestbook.yaml")
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL"); err != nil {
		return nil, err
	}
	return set, nil
}
