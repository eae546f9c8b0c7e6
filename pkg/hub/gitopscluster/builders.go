package gitopscluster

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// Labels of the Argo CD cluster Secrets besides apps.LabelArgoSecretType (the names
// propagation reads too live in pkg/apis/apps): what Argo CD and existing ApplicationSets
// select on; keep them exactly. Every object this controller creates (Secrets, ConfigMaps,
// Role, RoleBinding) carries apps.LabelManagedBy=apps.ManagedByValue; the controller's own
// cache only holds objects with it.
const (
	LabelACMCluster    = "apps.open-cluster-management.io/acm-cluster"
	LabelClusterName   = "apps.open-cluster-management.io/cluster-name"
	LabelClusterServer = "apps.open-cluster-management.io/cluster-server"
)

// Names of the ApplicationSet generator configuration: the ConfigMaps the ApplicationSet
// placement generator of OCM and RHACM reads its placementdecisions lookup from.
const (
	ConfigMapOCMPlacementGenerator = "ocm-placement-generator"
	ConfigMapACMPlacement          = "acm-placement"
	// DefaultApplicationSetControllerServiceAccount runs the Argo CD ApplicationSet
	// controller of an upstream install or a Helm release named argocd. OpenShift GitOps
	// and other release names use others: Options.ApplicationSetControllerServiceAccount.
	DefaultApplicationSetControllerServiceAccount = "argocd-applicationset-controller"
	// placementRoleSuffix gives the Role and RoleBinding the name older installs use:
	// "<argo namespace>-applicationset-controller-placement".
	placementRoleSuffix = "-applicationset-controller-placement"
)

// RoleName is the name of the Role and RoleBinding in argoNamespace.
func RoleName(argoNamespace string) string { return argoNamespace + placementRoleSuffix }

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// labelSafe turns s into a valid label value: invalid characters become '-', at most 63
// characters, starting and ending with an alphanumeric character.
func labelSafe(s string) string {
	s = labelUnsafe.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	})
}

// serverHost is the host part of a server URL, as used in the cluster-server label.
func serverHost(server string) string {
	host := server
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, ":/"); i >= 0 {
		host = host[:i]
	}
	return labelSafe(host)
}

// placementKey is the "<namespace>/<name>" of the Placement gc references, defaulting the
// namespace to gc's; empty when there is no name. It is the value of the field index.
func placementKey(gc *appsv1beta1.GitOpsCluster) string {
	ref := gc.Spec.PlacementRef
	if ref == nil || ref.Name == "" {
		return ""
	}
	ns := ref.Namespace
	if ns == "" {
		ns = gc.Namespace
	}
	return ns + "/" + ref.Name
}

// validatePlacementRef checks gc's placementRef without reading anything: it must be a
// Placement of group cluster.open-cluster-management.io in gc's namespace. It returns an
// empty reason when the reference is well-formed.
func validatePlacementRef(gc *appsv1beta1.GitOpsCluster) (reason, message string) {
	ref := gc.Spec.PlacementRef
	switch {
	case ref == nil || ref.Name == "":
		return appsv1beta1.ReasonInvalidPlacementRef, "spec.placementRef must name a Placement"
	case ref.Kind != "Placement":
		return appsv1beta1.ReasonInvalidPlacementRef,
			fmt.Sprintf("spec.placementRef has kind %q; only kind Placement (cluster.open-cluster-management.io) is supported", ref.Kind)
	case ref.APIVersion != "" && apiGroup(ref.APIVersion) != clusterv1beta1.GroupName:
		return appsv1beta1.ReasonInvalidPlacementRef,
			fmt.Sprintf("spec.placementRef has apiVersion %q; a Placement of group %s is required", ref.APIVersion, clusterv1beta1.GroupName)
	case ref.Namespace != "" && ref.Namespace != gc.Namespace:
		return appsv1beta1.ReasonPlacementNamespaceMismatch,
			fmt.Sprintf("spec.placementRef names namespace %q; the Placement must be in the GitOpsCluster's namespace %q", ref.Namespace, gc.Namespace)
	}
	return "", ""
}

func apiGroup(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return "" // the core group
}

// decidedClusters are the distinct cluster names of the decisions, sorted.
func decidedClusters(decisions []clusterv1beta1.PlacementDecision) []string {
	set := map[string]struct{}{}
	for i := range decisions {
		for _, d := range decisions[i].Status.Decisions {
			if d.ClusterName != "" {
				set[d.ClusterName] = struct{}{}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// desiredClusterSecret is the Argo CD cluster Secret gc wants for cluster in argoNamespace,
// gc its only owner. The pull model's Secrets are blank: the cluster's name and a
// placeholder server, no credentials. mc, when known, contributes its labels so
// ApplicationSet cluster generators can select on them; the Secret's own labels win over
// a cluster label of the same key.
func desiredClusterSecret(gc *appsv1beta1.GitOpsCluster, argoNamespace, cluster string, mc *clusterv1.ManagedCluster) *corev1.Secret {
	server := apps.PlaceholderServer(cluster)
	labels := map[string]string{}
	if mc != nil {
		maps.Copy(labels, mc.Labels)
	}
	maps.Copy(labels, map[string]string{
		apps.LabelArgoSecretType: apps.ArgoSecretTypeCluster,
		LabelACMCluster:          "true",
		LabelClusterName:         labelSafe(cluster),
		LabelClusterServer:       serverHost(server),
		apps.LabelManagedBy:      apps.ManagedByValue,
	})

	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      apps.ClusterSecretName(cluster),
			Namespace: argoNamespace,
			Labels:    labels,
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"name":   []byte(cluster),
			"server": []byte(server),
		},
	}
	withOwners(s, []types.NamespacedName{ownerKey(gc)})
	return s
}

// mergeClusterSecret returns existing changed to match desired, or nil when it already
// does. Labels and data are replaced (a label removed from the ManagedCluster disappears
// from the Secret); the owners become those of both; annotations of others are kept.
func mergeClusterSecret(existing, desired *corev1.Secret) *corev1.Secret {
	out := existing.DeepCopy()
	out.Labels = maps.Clone(desired.Labels)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	maps.Copy(out.Annotations, desired.Annotations)
	withOwners(out, append(ownersOf(existing), ownersOf(desired)...))
	out.Data = maps.Clone(desired.Data)
	out.StringData = nil
	if out.Type == "" {
		out.Type = desired.Type
	}
	if maps.Equal(existing.Labels, out.Labels) &&
		maps.Equal(existing.Annotations, out.Annotations) &&
		len(existing.OwnerReferences) == len(out.OwnerReferences) &&
		maps.EqualFunc(existing.Data, out.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	return out
}

// desiredConfigMaps are the placement generator ConfigMaps (ConfigMapOCMPlacementGenerator
// and ConfigMapACMPlacement).
func desiredConfigMaps(argoNamespace string) []*corev1.ConfigMap {
	data := map[string]string{
		"apiVersion":    clusterv1beta1.GroupVersion.String(),
		"kind":          "placementdecisions",
		"statusListKey": "decisions",
		"matchKey":      "clusterName",
	}
	var out []*corev1.ConfigMap
	for _, name := range []string{ConfigMapOCMPlacementGenerator, ConfigMapACMPlacement} {
		out = append(out, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: argoNamespace,
				Labels:    map[string]string{apps.LabelManagedBy: apps.ManagedByValue},
			},
			Data: maps.Clone(data),
		})
	}
	return out
}

// desiredRole lets its subjects read placementdecisions in argoNamespace.
func desiredRole(argoNamespace string) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RoleName(argoNamespace),
			Namespace: argoNamespace,
			Labels:    map[string]string{apps.LabelManagedBy: apps.ManagedByValue},
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{clusterv1beta1.GroupName},
			Resources: []string{"placementdecisions"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
}

// desiredRoleBinding binds desiredRole to the ApplicationSet controller's ServiceAccount
// serviceAccount in argoNamespace.
func desiredRoleBinding(argoNamespace, serviceAccount string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RoleName(argoNamespace),
			Namespace: argoNamespace,
			Labels:    map[string]string{apps.LabelManagedBy: apps.ManagedByValue},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName(argoNamespace)},
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      serviceAccount,
			Namespace: argoNamespace,
		}},
	}
}
