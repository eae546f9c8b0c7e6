// Package finalizers is `argocd-pull-addon release-finalizers`: the chart's post-delete hook.
//
// Two finalizers on the hub are released by the manager alone: its own on GitOpsClusters
// (appsv1beta1.GitOpsClusterFinalizer) and Argo CD's resources finalizer on pulled hub Applications,
// which the hub's Argo CD skips. Once the chart is uninstalled no manager runs, and deleting
// such an object would hang forever. The hook runs after Helm deleted the manager's
// Deployment and RBAC (so the manager can no longer add the finalizer back) and removes
// both from every object. What they guarded is left in place: the Argo CD cluster Secrets
// of GitOpsClusters and the ManifestWorks of Applications keep what the clusters run; a
// manager installed again cleans up the Secrets of GitOpsClusters deleted meanwhile.
package finalizers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/appwrite"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/endpoints"
)

// Release is one finalizer of one object that ReleaseAll removed, or would remove.
type Release struct {
	// Kind is GitOpsCluster or Application.
	Kind      string
	Object    types.NamespacedName
	Finalizer string
}

// NewCommand returns the `release-finalizers` subcommand.
func NewCommand() *cobra.Command {
	o := endpoints.NewOptions(0, 0)
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "release-finalizers",
		Short: "Remove the finalizers only the hub manager releases (the chart's uninstall hook)",
		Long: `Remove the finalizers only the hub manager releases, from every object on the hub:
` + appsv1beta1.GitOpsClusterFinalizer + ` from GitOpsClusters and
` + pullmodel.ResourcesFinalizer + ` from pulled hub Applications.

The chart runs it as a post-delete hook, after the manager is gone, so that deleting a
GitOpsCluster or a pulled Application later does not hang. Run it by hand after
'helm uninstall --no-hooks'. Argo CD cluster Secrets and ManifestWorks stay as they are.
With --dry-run it lists each object and finalizer it would release and writes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.RESTConfig()
			if err != nil {
				return err
			}
			scheme := runtime.NewScheme()
			if err := appsv1beta1.AddToScheme(scheme); err != nil {
				return err
			}
			if err := argov1alpha1.AddToScheme(scheme); err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return fmt.Errorf("creating the hub client: %w", err)
			}
			released, err := ReleaseAll(cmd.Context(), c, dryRun)
			if printErr := printReleases(cmd.OutOrStdout(), released, dryRun); printErr != nil {
				return errors.Join(err, printErr)
			}
			return err
		},
	}
	// Only the API server: the hook serves no metrics or probes.
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig of the hub API server. Empty: the in-cluster service account, or $KUBECONFIG.")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "List each object and finalizer that would be released, and write nothing.")
	return cmd
}

// printReleases writes one line per released finalizer (kind, namespace/name, finalizer)
// and a summary line.
func printReleases(out io.Writer, released []Release, dryRun bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	counts := map[string]int{}
	for _, r := range released {
		counts[r.Kind]++
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Kind, r.Object, r.Finalizer)
	}
	verb := "Released"
	if dryRun {
		verb = "Dry run, nothing written: would release"
	}
	fmt.Fprintf(w, "%s the finalizers of %d GitOpsClusters and %d pulled Applications\n",
		verb, counts[kindGitOpsCluster], counts[kindApplication])
	return w.Flush()
}

const (
	kindGitOpsCluster = "GitOpsCluster"
	kindApplication   = "Application"
)

// ReleaseAll removes appsv1beta1.GitOpsClusterFinalizer from every GitOpsCluster and Argo CD's
// resources finalizer from every Application pullmodel.HoldsResourcesFinalizer says the
// manager would release, and returns what it removed. With dryRun it only lists them. A
// kind whose API is not served (CRD already gone) has nothing to release.
func ReleaseAll(ctx context.Context, c client.Client, dryRun bool) ([]Release, error) {
	var released []Release
	log := ctrl.LoggerFrom(ctx)

	var gcs appsv1beta1.GitOpsClusterList
	if err := c.List(ctx, &gcs); err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return released, fmt.Errorf("listing GitOpsClusters: %w", err)
	}
	for i := range gcs.Items {
		gc := &gcs.Items[i]
		if !controllerutil.ContainsFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer) {
			continue
		}
		release := Release{Kind: kindGitOpsCluster, Object: types.NamespacedName{Namespace: gc.Namespace, Name: gc.Name},
			Finalizer: appsv1beta1.GitOpsClusterFinalizer}
		if dryRun {
			released = append(released, release)
			continue
		}
		if err := removeGitOpsClusterFinalizer(ctx, c, gc); err != nil {
			return released, err
		}
		released = append(released, release)
		log.Info("Released GitOpsCluster", "gitOpsCluster", klog.KObj(gc), "finalizer", appsv1beta1.GitOpsClusterFinalizer)
	}

	var list argov1alpha1.ApplicationList
	if err := c.List(ctx, &list, client.HasLabels{apps.LabelPullToOCMManagedCluster}); err != nil &&
		!meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return released, fmt.Errorf("listing pulled Applications: %w", err)
	}
	for i := range list.Items {
		app := &list.Items[i]
		if !pullmodel.HoldsResourcesFinalizer(app) {
			continue
		}
		release := Release{Kind: kindApplication, Object: types.NamespacedName{Namespace: app.Namespace, Name: app.Name},
			Finalizer: pullmodel.ResourcesFinalizer}
		if dryRun {
			released = append(released, release)
			continue
		}
		// The one locked write of a hub Application; after a conflict the rule is asked again.
		_, written, err := appwrite.PatchApplication(ctx, c, c, nil, app, func(app *argov1alpha1.Application) bool {
			return pullmodel.HoldsResourcesFinalizer(app) && controllerutil.RemoveFinalizer(app, pullmodel.ResourcesFinalizer)
		})
		if err != nil {
			return released, fmt.Errorf("removing finalizer %s from Application %s: %w", pullmodel.ResourcesFinalizer, klog.KObj(app), err)
		}
		if written == nil {
			continue
		}
		released = append(released, release)
		log.Info("Released Application", "application", klog.KObj(app), "finalizer", pullmodel.ResourcesFinalizer)
	}
	return released, nil
}

// removeGitOpsClusterFinalizer removes appsv1beta1.GitOpsClusterFinalizer from gc with an optimistic
// lock, reading gc again after a conflict.
func removeGitOpsClusterFinalizer(ctx context.Context, c client.Client, gc *appsv1beta1.GitOpsCluster) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := c.Get(ctx, client.ObjectKeyFromObject(gc), gc); err != nil {
				return err
			}
		}
		first = false
		if !controllerutil.ContainsFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer) {
			return nil
		}
		patch := client.MergeFromWithOptions(gc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(gc, appsv1beta1.GitOpsClusterFinalizer)
		return c.Patch(ctx, gc, patch)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer %s from GitOpsCluster %s: %w", appsv1beta1.GitOpsClusterFinalizer, klog.KObj(gc), err)
	}
	return nil
}
