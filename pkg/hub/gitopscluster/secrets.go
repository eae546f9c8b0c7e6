package gitopscluster

// The cluster Secrets of one GitOpsCluster, shared with the other GitOpsClusters that
// select the same cluster for the same Argo CD namespace (owners.go).

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// releaseAttempts bounds how often release looks again when the Secret changed between
// reading it and deleting it (another GitOpsCluster joining it, a label change).
const releaseAttempts = 3

// applyClusterSecrets makes gc an owner of exactly one cluster Secret per decided cluster
// in the Argo CD namespace: creating a missing one, joining one another GitOpsCluster
// created, updating (only on change), and letting go of the others it owns. A Secret no
// GitOpsCluster created is never written. It returns the registered clusters and the
// conflicts.
func (r *reconciler) applyClusterSecrets(ctx context.Context, gc *appsv1beta1.GitOpsCluster, clusters []string) ([]string, []string, error) {
	log := ctrl.LoggerFrom(ctx)
	argoNs := gc.Spec.ArgoServer.ArgoNamespace
	owner := ownerKey(gc)

	// Every Secret gc owns, in any namespace (the Argo CD namespace may have changed).
	mine, err := r.secretsOf(ctx, r.owned.GetCache(), owner)
	if err != nil {
		return nil, nil, err
	}

	var registered, conflicts []string
	var errs []error
	wanted := map[types.NamespacedName]bool{}
	for _, name := range clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("reading ManagedCluster %s: %w", name, err))
				continue
			}
			// Decided but unknown: register it without cluster labels; the ManagedCluster
			// watch brings them once it appears.
			mc = nil
		}
		desired := desiredClusterSecret(gc, argoNs, name, mc)
		key := client.ObjectKeyFromObject(desired)
		wanted[key] = true

		cur, ok := mine[key]
		if !ok {
			cur, err = r.findOrCreate(ctx, desired)
			switch {
			case err != nil:
				errs = append(errs, err)
				continue
			case cur == nil:
				log.V(2).Info("Created cluster Secret", "secret", klog.KObj(desired), "cluster", name)
				registered = append(registered, name)
				continue
			case len(ownersOf(cur)) == 0:
				conflicts = append(conflicts, fmt.Sprintf("cluster %s: Secret %s", name, key))
				continue
			}
		}
		if updated := mergeClusterSecret(cur, desired); updated != nil {
			// A merge patch: it adds gc's own marks and changes what differs, so owners
			// joining or leaving at the same time keep theirs.
			if err := r.client.Patch(ctx, updated, client.MergeFrom(cur)); err != nil {
				errs = append(errs, fmt.Errorf("updating cluster Secret %s: %w", key, err))
				continue
			}
			log.V(2).Info("Updated cluster Secret", "secret", klog.KObj(updated), "cluster", name, "owners", len(ownersOf(updated)))
		} else {
			log.V(4).Info("Cluster Secret up to date", "secret", klog.KObj(cur), "cluster", name)
		}
		registered = append(registered, name)
	}

	for key, s := range mine {
		if wanted[key] {
			continue
		}
		if err := r.release(ctx, s, owner); err != nil {
			errs = append(errs, err)
		}
	}
	return registered, conflicts, errors.Join(errs...)
}

// findOrCreate reads the Secret of desired's name that gc does not own yet, or creates
// desired when there is none. It returns nil when it created desired.
func (r *reconciler) findOrCreate(ctx context.Context, desired *corev1.Secret) (*corev1.Secret, error) {
	key := client.ObjectKeyFromObject(desired)
	cur := &corev1.Secret{}
	// Another GitOpsCluster's Secret is in the cache of owned objects; someone else's, or
	// one written a moment ago, only on the API server.
	err := r.owned.GetCache().Get(ctx, key, cur)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, cur)
	}
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		return cur, nil
	}
	err = r.client.Create(ctx, desired)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return nil, fmt.Errorf("creating cluster Secret %s: %w", key, err)
		}
		return nil, nil
	}
	// Created by another GitOpsCluster since: join it.
	if err := r.apiReader.Get(ctx, key, cur); err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	return cur, nil
}

// secretsOf are the Secrets owner owns, by key, as reader lists them.
func (r *reconciler) secretsOf(ctx context.Context, reader client.Reader, owner types.NamespacedName) (map[types.NamespacedName]*corev1.Secret, error) {
	out := map[types.NamespacedName]*corev1.Secret{}
	// Namespace by namespace when the manager may read Secrets only in the Argo CD
	// namespaces; "" lists all.
	namespaces := r.opts.ArgoNamespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, sel := range []client.ListOption{
			client.HasLabels{ownerMark(owner)},
			client.MatchingLabels(legacyOwnerLabels(owner)),
		} {
			var list corev1.SecretList
			if err := reader.List(ctx, &list, sel, client.InNamespace(ns)); err != nil {
				return nil, fmt.Errorf("listing the cluster Secrets of GitOpsCluster %s: %w", owner, err)
			}
			for i := range list.Items {
				if ownedBy(&list.Items[i], owner) {
					out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
				}
			}
		}
	}
	return out, nil
}

// releaseAll lets go of every Secret owner owns, as reader lists them.
func (r *reconciler) releaseAll(ctx context.Context, reader client.Reader, owner types.NamespacedName) error {
	mine, err := r.secretsOf(ctx, reader, owner)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range mine {
		errs = append(errs, r.release(ctx, s, owner))
	}
	return errors.Join(errs...)
}

// release removes owner from s's owners, or deletes s when owner is the last. The deletion
// is conditional on the resourceVersion that showed owner as the last: when s changed in
// between (another GitOpsCluster joined it), it is read again and looked at anew.
func (r *reconciler) release(ctx context.Context, s *corev1.Secret, owner types.NamespacedName) error {
	log := ctrl.LoggerFrom(ctx)
	for attempt := 1; ; attempt++ {
		updated, last := releaseOwner(s, owner)
		switch {
		case updated != nil:
			if err := r.client.Patch(ctx, updated, client.MergeFrom(s)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("releasing cluster Secret %s: %w", klog.KObj(s), err)
			}
			log.V(2).Info("Released cluster Secret, other GitOpsClusters still own it", "secret", klog.KObj(s), "owners", len(ownersOf(updated)))
			return nil
		case !last:
			return nil
		}
		err := r.client.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
		if err == nil || apierrors.IsNotFound(err) {
			log.V(2).Info("Deleted cluster Secret, no GitOpsCluster owns it any more", "secret", klog.KObj(s))
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == releaseAttempts {
			return fmt.Errorf("deleting cluster Secret %s: %w", klog.KObj(s), err)
		}
		fresh := &corev1.Secret{}
		if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(s), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		s = fresh
	}
}
