package gitopscluster

// Who owns a cluster Secret. Several GitOpsClusters may select the same cluster for the
// same Argo CD namespace (one per team or application group), and Argo CD wants one
// Secret per cluster: the Secret is shared, and its owners are a set. Each owner has a
// label (to list the Secrets of one GitOpsCluster from the cache) and an annotation of the
// same key (its exact namespace and name, to map a Secret's events back to every owner).
// The Secret exists while it has an owner: the last one to let go deletes it.
//
// Owner references would not do: a GitOpsCluster in another namespace than the Argo CD
// one cannot be referenced, so the garbage collector could delete a Secret such a
// GitOpsCluster still needs.

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/naming"
)

// OwnerPrefix is the prefix of the owner marks of a cluster Secret: for each owning
// GitOpsCluster a label "<OwnerPrefix>/<namespace>.<name>" (value "true") and an
// annotation of the same key whose value is "<namespace>/<name>". The key's name part is
// hashed when longer than 63 characters.
const OwnerPrefix = "owner.gitopscluster.apps.open-cluster-management.io"

// ownerMarkValue is the value of an owner label; only its key matters.
const ownerMarkValue = "true"

// Single-owner marks of Secrets written before ownership was a set: still read as an
// owner, replaced by an owner mark on the next write.
const (
	legacyLabelOwnerNamespace = "apps.open-cluster-management.io/gitopscluster-namespace"
	legacyLabelOwnerName      = "apps.open-cluster-management.io/gitopscluster-name"
	legacyAnnotationOwner     = "apps.open-cluster-management.io/gitopscluster"
)

// ownerMark is the key of owner's label and annotation.
func ownerMark(owner types.NamespacedName) string {
	// A namespace has no dots and both parts are DNS names, so "<namespace>.<name>" is a
	// valid, unambiguous key name; naming.Bounded keeps distinct long ones distinct.
	return OwnerPrefix + "/" + naming.Bounded(owner.Namespace+"."+owner.Name, validation.LabelValueMaxLength, 16)
}

// ownerNameLabel is the GitOpsCluster's name as a label value, as the single-owner
// labels of earlier versions carry it: the name itself when it fits, otherwise a prefix
// and a stable hash.
func ownerNameLabel(name string) string {
	return naming.Bounded(name, validation.LabelValueMaxLength, 16)
}

// legacyOwnerLabels select the Secrets an earlier version wrote for owner.
func legacyOwnerLabels(owner types.NamespacedName) map[string]string {
	return map[string]string{
		apps.LabelManagedBy:       apps.ManagedByValue,
		legacyLabelOwnerNamespace: owner.Namespace,
		legacyLabelOwnerName:      ownerNameLabel(owner.Name),
	}
}

// ownerKey is gc's namespace and name.
func ownerKey(gc *appsv1beta1.GitOpsCluster) types.NamespacedName {
	return types.NamespacedName{Namespace: gc.Namespace, Name: gc.Name}
}

// parseOwner reads "<namespace>/<name>".
func parseOwner(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// ownersOf are the GitOpsClusters that own s, sorted; none when this controller did not
// create s.
func ownersOf(s *corev1.Secret) []types.NamespacedName {
	if s.Labels[apps.LabelManagedBy] != apps.ManagedByValue {
		return nil
	}
	set := map[types.NamespacedName]bool{}
	for k, v := range s.Annotations {
		if !strings.HasPrefix(k, OwnerPrefix+"/") {
			continue
		}
		if o, ok := parseOwner(v); ok && k == ownerMark(o) {
			set[o] = true
		}
	}
	if o, ok := parseOwner(s.Annotations[legacyAnnotationOwner]); ok {
		set[o] = true
	}
	return slices.SortedFunc(maps.Keys(set), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	})
}

// ownedBy says whether owner is one of s's owners.
func ownedBy(s *corev1.Secret, owner types.NamespacedName) bool {
	return slices.Contains(ownersOf(s), owner)
}

// withOwners sets s's owner marks to owners, in place: the marks of the owners given, no
// others, no single-owner marks, no owner reference to a GitOpsCluster. The labels and
// annotations of anyone else are kept.
func withOwners(s *corev1.Secret, owners []types.NamespacedName) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	isMark := func(k, _ string) bool { return strings.HasPrefix(k, OwnerPrefix+"/") }
	maps.DeleteFunc(s.Labels, isMark)
	maps.DeleteFunc(s.Annotations, isMark)
	delete(s.Labels, legacyLabelOwnerNamespace)
	delete(s.Labels, legacyLabelOwnerName)
	delete(s.Annotations, legacyAnnotationOwner)
	for _, o := range owners {
		s.Labels[ownerMark(o)] = ownerMarkValue
		s.Annotations[ownerMark(o)] = o.String()
	}
	// Written by earlier versions when the GitOpsCluster was in the Argo CD namespace:
	// left, the garbage collector would delete the Secret with that GitOpsCluster even
	// while other owners need it.
	s.OwnerReferences = slices.DeleteFunc(s.OwnerReferences, isGitOpsClusterRef)
	if len(s.OwnerReferences) == 0 {
		s.OwnerReferences = nil
	}
}

func isGitOpsClusterRef(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == appsv1beta1.GroupVersion.Group && ref.Kind == "GitOpsCluster"
}

// releaseOwner is s without owner among its owners. It returns nil when owner does not own
// s, and last when owner is the only one: then s is to be deleted, not updated.
func releaseOwner(s *corev1.Secret, owner types.NamespacedName) (updated *corev1.Secret, last bool) {
	owners := ownersOf(s)
	if !slices.Contains(owners, owner) {
		return nil, false
	}
	rest := slices.DeleteFunc(owners, func(o types.NamespacedName) bool { return o == owner })
	if len(rest) == 0 {
		return nil, true
	}
	out := s.DeepCopy()
	withOwners(out, rest)
	return out, false
}
