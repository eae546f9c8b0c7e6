package gitopscluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// legacySecret is s as an earlier version wrote it for its one owner: single-owner labels
// and annotation, and an owner reference.
func legacySecret(s *corev1.Secret, owner types.NamespacedName) *corev1.Secret {
	out := s.DeepCopy()
	withOwners(out, nil)
	out.Labels[legacyLabelOwnerNamespace] = owner.Namespace
	out.Labels[legacyLabelOwnerName] = ownerNameLabel(owner.Name)
	out.Annotations[legacyAnnotationOwner] = owner.String()
	out.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps.open-cluster-management.io/v1beta1", Kind: "GitOpsCluster",
		Name: owner.Name, UID: "uid-legacy", BlockOwnerDeletion: ptr.To(true),
	}}
	return out
}

func TestOwnerMark(t *testing.T) {
	long := strings.Repeat("n", 253)
	cases := map[string]struct {
		owner types.NamespacedName
		want  string
	}{
		"short":            {owner: types.NamespacedName{Namespace: "argocd", Name: "team-a"}, want: OwnerPrefix + "/argocd.team-a"},
		"dots in the name": {owner: types.NamespacedName{Namespace: "argocd", Name: "team.a"}, want: OwnerPrefix + "/argocd.team.a"},
		"long name":        {owner: types.NamespacedName{Namespace: "argocd", Name: long}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ownerMark(tc.owner)
			if tc.want != "" && got != tc.want {
				t.Fatalf("ownerMark = %q, want %q", got, tc.want)
			}
			if errs := validation.IsQualifiedName(got); len(errs) > 0 {
				t.Fatalf("%q is not a label or annotation key: %v", got, errs)
			}
		})
	}
	a := ownerMark(types.NamespacedName{Namespace: "argocd", Name: long})
	b := ownerMark(types.NamespacedName{Namespace: "argocd", Name: long + "m"})
	if a == b {
		t.Fatal("different long names share an owner mark")
	}
}

func TestOwnerNameLabel(t *testing.T) {
	long := strings.Repeat("n", 100)
	cases := map[string]struct{ in, want string }{
		"short":      {in: "gc", want: "gc"},
		"exactly 63": {in: strings.Repeat("x", 63), want: strings.Repeat("x", 63)},
		"long":       {in: long, want: ownerNameLabel(long)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ownerNameLabel(tc.in)
			if got != tc.want {
				t.Fatalf("ownerNameLabel = %q, want %q", got, tc.want)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Fatalf("%q is not a label value: %v", got, errs)
			}
		})
	}
	if ownerNameLabel(long) == ownerNameLabel(long+"m") {
		t.Fatal("different long names share a label value")
	}
}

func TestOwnersOf(t *testing.T) {
	a := types.NamespacedName{Namespace: "argocd", Name: "a"}
	b := types.NamespacedName{Namespace: "team", Name: "b"}
	secret := func(labels, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	managed := map[string]string{apps.LabelManagedBy: apps.ManagedByValue}
	cases := map[string]struct {
		s    *corev1.Secret
		want []types.NamespacedName
	}{
		"two owners, sorted": {
			s:    secret(managed, map[string]string{ownerMark(b): "team/b", ownerMark(a): "argocd/a", "other": "x"}),
			want: []types.NamespacedName{a, b},
		},
		"single-owner annotation of an earlier version": {
			s:    secret(managed, map[string]string{legacyAnnotationOwner: "argocd/a"}),
			want: []types.NamespacedName{a},
		},
		"both forms of one owner count once": {
			s:    secret(managed, map[string]string{legacyAnnotationOwner: "argocd/a", ownerMark(a): "argocd/a"}),
			want: []types.NamespacedName{a},
		},
		"not created by this controller": {
			s: secret(map[string]string{"app.kubernetes.io/managed-by": "someone"}, map[string]string{ownerMark(a): "argocd/a"}),
		},
		"a mark whose key does not match its value": {
			s: secret(managed, map[string]string{ownerMark(a): "team/b"}),
		},
		"malformed values": {
			s: secret(managed, map[string]string{OwnerPrefix + "/x": "x", legacyAnnotationOwner: "/a"}),
		},
		"managed but no owner": {s: secret(managed, nil)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ownersOf(tc.s), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("ownersOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleaseOwner(t *testing.T) {
	gc := newGitOpsCluster("gc").obj()
	me := ownerKey(gc)
	other := types.NamespacedName{Namespace: "team", Name: "other"}
	shared := func() *corev1.Secret {
		s := desiredClusterSecret(gc, "argocd", "c1", nil)
		s.Labels["env"] = "prod"
		s.Annotations["note"] = "kept"
		withOwners(s, []types.NamespacedName{me, other})
		return s
	}
	cases := map[string]struct {
		s          *corev1.Secret
		wantLast   bool
		wantOwners []types.NamespacedName // of the update; nil: no update
	}{
		"the only owner deletes":            {s: desiredClusterSecret(gc, "argocd", "c1", nil), wantLast: true},
		"one of two leaves its marks":       {s: shared(), wantOwners: []types.NamespacedName{other}},
		"not an owner: nothing":             {s: desiredClusterSecret(newGitOpsCluster("x").obj(), "argocd", "c1", nil)},
		"not created by this controller":    {s: &corev1.Secret{}},
		"the only owner, earlier version":   {s: legacySecret(desiredClusterSecret(gc, "argocd", "c1", nil), me), wantLast: true},
		"an earlier version's owner leaves": {s: joinedLegacy(gc, me, other), wantOwners: []types.NamespacedName{other}},
		"the owner beside an earlier version's leaves": {
			s: joinedLegacy(gc, other, me), wantOwners: []types.NamespacedName{other},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.s.DeepCopy()
			updated, last := releaseOwner(tc.s, me)
			if diff := cmp.Diff(before, tc.s); diff != "" {
				t.Fatalf("input mutated:\n%s", diff)
			}
			if last != tc.wantLast {
				t.Fatalf("last = %v, want %v", last, tc.wantLast)
			}
			if (updated != nil) != (tc.wantOwners != nil) {
				t.Fatalf("updated = %v, want an update: %v", updated, tc.wantOwners != nil)
			}
			if updated == nil {
				return
			}
			if diff := cmp.Diff(tc.wantOwners, ownersOf(updated)); diff != "" {
				t.Fatalf("owners (-want +got):\n%s", diff)
			}
			for k := range updated.Labels {
				if k == ownerMark(me) || k == legacyLabelOwnerName || k == legacyLabelOwnerNamespace {
					t.Fatalf("label %s kept", k)
				}
			}
			if len(updated.OwnerReferences) != 0 {
				t.Fatalf("owner references %v kept", updated.OwnerReferences)
			}
			if updated.Labels["env"] != before.Labels["env"] || updated.Labels[apps.LabelArgoSecretType] != "cluster" ||
				updated.Annotations["note"] != before.Annotations["note"] {
				t.Fatalf("labels %v annotations %v: only owner marks may change", updated.Labels, updated.Annotations)
			}
		})
	}
}

// joinedLegacy is a Secret an earlier version wrote for legacyOwner that owner has joined
// by label and annotation only (as a write from an older view could leave it).
func joinedLegacy(gc *appsv1beta1.GitOpsCluster, legacyOwner, owner types.NamespacedName) *corev1.Secret {
	s := desiredClusterSecret(gc, "argocd", "c1", nil)
	s.Labels["env"] = "prod"
	s.Annotations["note"] = "kept"
	s = legacySecret(s, legacyOwner)
	s.Labels[ownerMark(owner)] = ownerMarkValue
	s.Annotations[ownerMark(owner)] = owner.String()
	return s
}

func TestWithOwnersKeepsOtherOwnerReferences(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps.open-cluster-management.io/v1beta1", Kind: "GitOpsCluster", Name: "gc", UID: "1"},
		{APIVersion: "apps.open-cluster-management.io/v1alpha1", Kind: "GitOpsCluster", Name: "old", UID: "2"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "3"},
	}}}
	withOwners(s, []types.NamespacedName{{Namespace: "argocd", Name: "gc"}})
	if diff := cmp.Diff([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "3"}}, s.OwnerReferences); diff != "" {
		t.Fatalf("owner references (-want +got):\n%s", diff)
	}
}
