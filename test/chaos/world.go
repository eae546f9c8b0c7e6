//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// What the harness sets up on the fleet's hub before the first operation.
const (
	argoNS = framework.ChartNamespace // argocd, on the hub and on the clusters
	// allPlacement decides on every cluster: the GitOpsCluster registers them all with
	// Argo CD, so a standalone Application may target any of them at any time.
	allPlacement = "chaos-all"
	// appSetPlacement decides on the clusters without excludedLabel: the ApplicationSets'.
	appSetPlacement = "chaos-appsets"
	excludedLabel   = "chaos.argocd-pull/excluded"
	gitOpsCluster   = "chaos"
	project         = "default"
)

var (
	applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	appSetGVK      = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}
	// guestbookPaths: the same two objects under both, with different data.
	guestbookPaths = []string{"guestbook", "guestbook-alt"}
	appSetNames    = []string{"chaos-a", "chaos-b"}
)

// revisions is how many commits the guestbook repository has.
const revisions = 3

// harness is one chaos run: the fleet, the model, the seeded random source, the
// operation log and the figures.
type harness struct {
	pf     *fleet.PullFleet
	hub    client.Client
	spokes map[string]client.Client
	repo   *fleet.LocalGitRepo
	// revs are the repository's commits, oldest first.
	revs []string
	rng  *rand.Rand
	seed uint64
	m    *model
	log  *opLog
	figs *figures
	// observed remembers, per delivery epoch, the UIDs seen on the cluster.
	observed map[string]observation
	faults   *faultRunner
	// out is where progress goes (the test's stdout).
	out func(format string, args ...any)
}

// setUpHub creates the guestbook repository, binds the global ManagedClusterSet to
// argocd, creates the two Placements, the GitOpsCluster and the ApplicationSets, and
// waits for the generator ConfigMap.
func (h *harness) setUpHub(ctx context.Context, dir string) error {
	files := map[string]string{}
	for _, p := range guestbookPaths {
		files[p+"/guestbook.yaml"] = guestbookAt(0, p)
	}
	repo, err := fleet.NewLocalGitRepo(filepath.Join(dir, "git", "chaos"), files)
	if err != nil {
		return err
	}
	h.repo = repo
	for rev := 0; rev < revisions; rev++ {
		if rev > 0 {
			files := map[string]string{}
			for _, p := range guestbookPaths {
				files[p+"/guestbook.yaml"] = guestbookAt(rev, p)
			}
			if err := repo.Commit(fmt.Sprintf("revision %d", rev), files); err != nil {
				return err
			}
		}
		head, err := repo.Head()
		if err != nil {
			return err
		}
		h.revs = append(h.revs, head)
	}

	if err := waitFor(ctx, time.Minute, "the global ManagedClusterSet", func(ctx context.Context) (bool, error) {
		err := h.hub.Get(ctx, client.ObjectKey{Name: "global"}, &clusterv1beta2.ManagedClusterSet{})
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return err
	}
	objs := []client.Object{
		// `clusteradm clusterset bind global --namespace argocd`.
		&clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "global"},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"},
		},
		&clusterv1beta1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: allPlacement},
			Spec:       clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}},
		},
		&clusterv1beta1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: appSetPlacement},
			Spec: clusterv1beta1.PlacementSpec{
				ClusterSets: []string{"global"},
				Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
					LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: excludedLabel, Operator: metav1.LabelSelectorOpDoesNotExist,
					}}},
				}}},
			},
		},
		&appsv1beta1.GitOpsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: gitOpsCluster},
			Spec: appsv1beta1.GitOpsClusterSpec{
				ArgoServer:                appsv1beta1.ArgoServerSpec{ArgoNamespace: argoNS},
				PlacementRef:              &corev1.ObjectReference{APIVersion: clusterv1beta1.GroupVersion.String(), Kind: "Placement", Name: allPlacement},
				CreateBlankClusterSecrets: ptr.To(true),
			},
		},
	}
	for _, o := range objs {
		if err := h.hub.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// Argo CD's applicationset-controller retries a missing generator ConfigMap only after
	// 3 minutes: the sets come once it exists.
	if err := waitFor(ctx, 2*time.Minute, "the generator ConfigMap "+fleet.GeneratorConfigMap, func(ctx context.Context) (bool, error) {
		err := h.hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: fleet.GeneratorConfigMap}, &corev1.ConfigMap{})
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return err
	}
	for _, s := range h.m.sets {
		if err := h.hub.Create(ctx, h.appSetObject(s)); err != nil {
			return fmt.Errorf("creating ApplicationSet %s: %w", s.name, err)
		}
	}
	return nil
}

// guestbookAt is the guestbook at revision rev under path: the ConfigMap's title says both.
func guestbookAt(rev int, path string) string {
	return strings.Replace(fleet.GuestbookYAML, "Guestbook from the hub", fmt.Sprintf("Guestbook revision %d at %s", rev, path), 1)
}

// appSetObject is ApplicationSet s as the harness applies it: the pull-model template of
// examples/pull/04-applicationset-guestbook.yaml on appSetPlacement, at s.src.
func (h *harness) appSetObject(s *appSet) *unstructured.Unstructured {
	set := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"generators": []any{map[string]any{"clusterDecisionResource": map[string]any{
				"configMapRef":        fleet.GeneratorConfigMap,
				"labelSelector":       map[string]any{"matchLabels": map[string]any{clusterv1beta1.PlacementLabel: appSetPlacement}},
				"requeueAfterSeconds": int64(10),
			}}},
			"template": map[string]any{
				"metadata": map[string]any{
					"name":   "{{name}}-" + s.name,
					"labels": map[string]any{apps.LabelPullToOCMManagedCluster: "true"},
					"annotations": map[string]any{
						apps.AnnotationSkipReconcile:                 "true",
						apps.AnnotationOCMManagedCluster:             "{{name}}",
						apps.AnnotationOCMManagedClusterAppNamespace: argoNS,
					},
				},
				"spec": h.appSpec(s.src, s.name),
			},
		},
	}}
	set.SetGroupVersionKind(appSetGVK)
	set.SetNamespace(argoNS)
	set.SetName(s.name)
	return set
}

// appSpec is a pulled Application's spec: src from the guestbook repository into
// namespace, synced automatically.
func (h *harness) appSpec(src source, namespace string) map[string]any {
	return map[string]any{
		"project": project,
		"source":  map[string]any{"repoURL": h.repo.URL, "targetRevision": h.revs[src.rev], "path": src.path},
		"destination": map[string]any{
			"server": "https://kubernetes.default.svc", "namespace": namespace,
		},
		"syncPolicy": map[string]any{
			"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"},
		},
	}
}

// waitFor polls cond every half second for at most timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, cond); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
