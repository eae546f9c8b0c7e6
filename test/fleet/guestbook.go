package fleet

// The example the README walks through (examples/pull/), as the e2e suite and the sandbox
// apply it: the default ManagedClusterSet bound, a Placement of it, a GitOpsCluster, and
// the guestbook ApplicationSet reading a local git repository.

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
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

// The pull story of examples/ (examples/pull/, applied in order) and its names.
const (
	// PullExamples is the directory of the pull-model story.
	PullExamples = "pull"
	// PullApplicationSetExample is its ApplicationSet, the last file of the story.
	PullApplicationSetExample = "pull/04-applicationset-guestbook.yaml"
	// GuestbookPath is the guestbook's path in its repository.
	GuestbookPath = "guestbook/guestbook.yaml"
	// GuestbookApplicationSet is the ApplicationSet of PullApplicationSetExample.
	GuestbookApplicationSet = "guestbook-app"
	// GuestbookPlacement is the Placement of examples/pull/02-placement.yaml.
	GuestbookPlacement = "guestbook-app-placement"
	// GuestbookGitOpsCluster is the GitOpsCluster of examples/pull/03-gitopscluster.yaml.
	GuestbookGitOpsCluster = "argo-ocm-importer"
	// GeneratorConfigMap is the duck-type ConfigMap the GitOpsCluster controller writes
	// for the ApplicationSet's clusterDecisionResource generator.
	GeneratorConfigMap = "ocm-placement-generator"
)

// NewGuestbookRepo creates the guestbook's git repository in dir.
func NewGuestbookRepo(dir string) (*LocalGitRepo, error) {
	return NewLocalGitRepo(dir, map[string]string{GuestbookPath: GuestbookYAML})
}

// DefaultClusterSetBindingExample binds the "default" ManagedClusterSet, which
// examples/pull/02-placement.yaml selects from, to namespace argocd: the story's first step.
const DefaultClusterSetBindingExample = "pull/01-managedclustersetbinding.yaml"

// BindDefaultClusterSet applies examples/pull/01-managedclustersetbinding.yaml to namespace, as
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
	binding, err := framework.ReadExample(DefaultClusterSetBindingExample)
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

// ApplyGuestbookExample applies the rest of examples/pull/ in order, as
// examples/README.md tells: ApplyPullExamplesUpToApplicationSet, then, once the
// GitOpsCluster's phase is successful (its generator ConfigMap written: Argo CD's
// applicationset-controller retries a missing one only after 3 minutes), the
// ApplicationSet with repoURL as its source.
func ApplyGuestbookExample(ctx context.Context, hub client.Client, repoURL string) error {
	if err := ApplyPullExamplesUpToApplicationSet(ctx, hub); err != nil {
		return err
	}
	if err := WaitForGitOpsClusterSuccessful(ctx, hub, framework.ChartNamespace, GuestbookGitOpsCluster); err != nil {
		return err
	}
	set, err := GuestbookApplicationSetFor(repoURL)
	if err != nil {
		return err
	}
	if err := hub.Create(ctx, set); err != nil {
		return fmt.Errorf("applying examples/%s: %w", PullApplicationSetExample, err)
	}
	return nil
}

// ApplyPullExamplesUpToApplicationSet applies, in order, the files of examples/pull/
// between its first (the binding, BindDefaultClusterSet's) and its last (the
// ApplicationSet, which waits for the GitOpsCluster). It fails when the story no longer
// starts and ends with those two, so no file of it goes unapplied.
func ApplyPullExamplesUpToApplicationSet(ctx context.Context, hub client.Client) error {
	files, err := framework.ReadExamples(PullExamples)
	if err != nil {
		return err
	}
	if len(files) < 2 || files[0].Path != DefaultClusterSetBindingExample || files[len(files)-1].Path != PullApplicationSetExample {
		return fmt.Errorf("examples/%s/ no longer starts with %s and ends with %s", PullExamples, DefaultClusterSetBindingExample, PullApplicationSetExample)
	}
	for _, f := range files[1 : len(files)-1] {
		for _, obj := range f.Objects {
			if err := hub.Create(ctx, obj); err != nil {
				return fmt.Errorf("applying examples/%s: %w", f.Path, err)
			}
		}
	}
	return nil
}

// WaitForGitOpsClusterSuccessful waits, as `kubectl wait gitopscluster/name
// --for=jsonpath='{.status.phase}'=successful --timeout=2m` does, until the GitOpsCluster
// has registered its clusters and written the generator ConfigMap.
func WaitForGitOpsClusterSuccessful(ctx context.Context, hub client.Client, namespace, name string) error {
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var phase string
	if err := wait.PollUntilContextCancel(waitCtx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		gc := &appsv1beta1.GitOpsCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, gc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		phase = gc.Status.Phase
		return phase == appsv1beta1.PhaseSuccessful, nil
	}); err != nil {
		return fmt.Errorf("waiting for GitOpsCluster %s/%s to be successful (phase %q): %w", namespace, name, phase, err)
	}
	return nil
}

// GuestbookApplicationSetFor is examples/pull/04-applicationset-guestbook.yaml with repoURL
// as its source: the one substitution the fleet needs, which serves its own repository.
func GuestbookApplicationSetFor(repoURL string) (*unstructured.Unstructured, error) {
	set, err := framework.ReadExample(PullApplicationSetExample)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(set.Object, repoURL, "spec", "template", "spec", "source", "repoURL"); err != nil {
		return nil, err
	}
	return set, nil
}
