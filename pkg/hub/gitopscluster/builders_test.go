package gitopscluster

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// gitOpsCluster is a fixture builder: newGitOpsCluster("gc").ref(...).obj().
type gitOpsCluster struct{ o *appsv1beta1.GitOpsCluster }

func newGitOpsCluster(name string) gitOpsCluster {
	return gitOpsCluster{&appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", UID: "uid-1", Generation: 1},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: "argocd"},
			PlacementRef: &corev1.ObjectReference{
				Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: "all",
			},
			CreateBlankClusterSecrets: ptr.To(true),
		},
	}}
}

func (b gitOpsCluster) ref(ref *corev1.ObjectReference) gitOpsCluster {
	b.o.Spec.PlacementRef = ref
	return b
}
func (b gitOpsCluster) namespace(ns string) gitOpsCluster { b.o.Namespace = ns; return b }
func (b gitOpsCluster) obj() *appsv1beta1.GitOpsCluster   { return b.o }

func TestValidatePlacementRef(t *testing.T) {
	cases := map[string]struct {
		ref        *corev1.ObjectReference
		wantReason string
	}{
		"placement v1beta1":   {ref: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: "p"}},
		"placement v1alpha1":  {ref: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1alpha1", Name: "p"}},
		"no apiVersion":       {ref: &corev1.ObjectReference{Kind: "Placement", Name: "p"}},
		"same namespace":      {ref: &corev1.ObjectReference{Kind: "Placement", Namespace: "argocd", Name: "p"}},
		"nil":                 {wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"no name":             {ref: &corev1.ObjectReference{Kind: "Placement"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"placement rule":      {ref: &corev1.ObjectReference{Kind: "PlacementRule", APIVersion: "apps.open-cluster-management.io/v1", Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"wrong group":         {ref: &corev1.ObjectReference{Kind: "Placement", APIVersion: "apps.open-cluster-management.io/v1", Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"core group":          {ref: &corev1.ObjectReference{Kind: "Placement", APIVersion: "v1", Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"lower-case kind":     {ref: &corev1.ObjectReference{Kind: "placement", Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"other namespace":     {ref: &corev1.ObjectReference{Kind: "Placement", Namespace: "elsewhere", Name: "p"}, wantReason: appsv1beta1.ReasonPlacementNamespaceMismatch},
		"kind checked first":  {ref: &corev1.ObjectReference{Kind: "Deployment", Namespace: "elsewhere", Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
		"empty kind is wrong": {ref: &corev1.ObjectReference{Name: "p"}, wantReason: appsv1beta1.ReasonInvalidPlacementRef},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, msg := validatePlacementRef(newGitOpsCluster("gc").ref(tc.ref).obj())
			if reason != tc.wantReason {
				t.Fatalf("reason = %q (%s), want %q", reason, msg, tc.wantReason)
			}
			if (reason == "") != (msg == "") {
				t.Fatalf("reason %q with message %q", reason, msg)
			}
		})
	}
}

func TestPlacementKey(t *testing.T) {
	cases := map[string]struct {
		gc   *appsv1beta1.GitOpsCluster
		want string
	}{
		"namespace defaults": {gc: newGitOpsCluster("gc").obj(), want: "argocd/all"},
		"explicit namespace": {gc: newGitOpsCluster("gc").ref(&corev1.ObjectReference{Kind: "Placement", Namespace: "x", Name: "p"}).obj(), want: "x/p"},
		"no ref":             {gc: newGitOpsCluster("gc").ref(nil).obj()},
		"no name":            {gc: newGitOpsCluster("gc").ref(&corev1.ObjectReference{Kind: "Placement"}).obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := placementKey(tc.gc); got != tc.want {
				t.Fatalf("placementKey = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLabelSafe(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain":         {in: "cluster1-control-plane", want: "cluster1-control-plane"},
		"invalid chars": {in: "a:b/c@d", want: "a-b-c-d"},
		"trimmed ends":  {in: "-.a.-", want: "a"},
		"too long":      {in: strings.Repeat("a", 62) + "-bbb", want: strings.Repeat("a", 62)},
		"empty":         {in: "", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := labelSafe(tc.in)
			if got != tc.want {
				t.Fatalf("labelSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Fatalf("labelSafe(%q) = %q is not a label value: %v", tc.in, got, errs)
			}
		})
	}
}

func TestServerHost(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"placeholder": {in: "https://c1-control-plane", want: "c1-control-plane"},
		"port":        {in: "https://api.c1.example.com:6443", want: "api.c1.example.com"},
		"path":        {in: "https://host/path", want: "host"},
		"no scheme":   {in: "host:443", want: "host"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := serverHost(tc.in); got != tc.want {
				t.Fatalf("serverHost(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecidedClusters(t *testing.T) {
	pd := func(names ...string) clusterv1beta1.PlacementDecision {
		d := clusterv1beta1.PlacementDecision{}
		for _, n := range names {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: n})
		}
		return d
	}
	cases := map[string]struct {
		in   []clusterv1beta1.PlacementDecision
		want []string
	}{
		"none":                  {},
		"sorted":                {in: []clusterv1beta1.PlacementDecision{pd("c2", "c1")}, want: []string{"c1", "c2"}},
		"several decisions":     {in: []clusterv1beta1.PlacementDecision{pd("c3"), pd("c1")}, want: []string{"c1", "c3"}},
		"duplicates and blanks": {in: []clusterv1beta1.PlacementDecision{pd("c1", ""), pd("c1")}, want: []string{"c1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decidedClusters(tc.in), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("decidedClusters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredClusterSecret(t *testing.T) {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{
		"env":                    "prod",
		apps.LabelArgoSecretType: "not-a-cluster", // ours wins
		"apps.open-cluster-management.io/cluster-name": "spoofed",
	}}}
	fixed := map[string]string{
		apps.LabelArgoSecretType: "cluster",
		LabelACMCluster:          "true",
		LabelClusterName:         "c1",
		LabelClusterServer:       "c1-control-plane",
		apps.LabelManagedBy:      apps.ManagedByValue,
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := map[string]struct {
		gc              *appsv1beta1.GitOpsCluster
		mc              *clusterv1.ManagedCluster
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		"cluster labels copied": {
			gc: newGitOpsCluster("gc").obj(), mc: mc,
			wantLabels:      with(fixed, "env", "prod", OwnerPrefix+"/argocd.gc", "true"),
			wantAnnotations: map[string]string{OwnerPrefix + "/argocd.gc": "argocd/gc"},
		},
		"GitOpsCluster in another namespace": {
			gc: newGitOpsCluster("gc").namespace("apps").obj(), mc: mc,
			wantLabels:      with(fixed, "env", "prod", OwnerPrefix+"/apps.gc", "true"),
			wantAnnotations: map[string]string{OwnerPrefix + "/apps.gc": "apps/gc"},
		},
		"unknown cluster": {
			gc:              newGitOpsCluster("gc").obj(),
			wantLabels:      with(fixed, OwnerPrefix+"/argocd.gc", "true"),
			wantAnnotations: map[string]string{OwnerPrefix + "/argocd.gc": "argocd/gc"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.mc.DeepCopy()
			s := desiredClusterSecret(tc.gc, "argocd", "c1", tc.mc)
			if diff := cmp.Diff(before, tc.mc); diff != "" {
				t.Fatalf("ManagedCluster mutated:\n%s", diff)
			}
			if s.Name != "c1-cluster-secret" || s.Namespace != "argocd" {
				t.Fatalf("secret %s/%s", s.Namespace, s.Name)
			}
			if diff := cmp.Diff(tc.wantLabels, s.Labels); diff != "" {
				t.Fatalf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, s.Annotations); diff != "" {
				t.Fatalf("annotations (-want +got):\n%s", diff)
			}
			wantData := map[string][]byte{"name": []byte("c1"), "server": []byte("https://c1-control-plane")}
			if diff := cmp.Diff(wantData, s.Data); diff != "" {
				t.Fatalf("data (-want +got):\n%s", diff)
			}
			if len(s.OwnerReferences) != 0 {
				t.Fatalf("owner references %v: the garbage collector must not delete a shared Secret", s.OwnerReferences)
			}
			if diff := cmp.Diff([]types.NamespacedName{ownerKey(tc.gc)}, ownersOf(s)); diff != "" {
				t.Fatalf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeClusterSecret(t *testing.T) {
	gc := newGitOpsCluster("gc").obj()
	other := types.NamespacedName{Namespace: "team-b", Name: "other"}
	desired := desiredClusterSecret(gc, "argocd", "c1", nil)
	cases := map[string]struct {
		existing   func() *corev1.Secret
		wantChange bool
		wantOwners []types.NamespacedName
		check      func(t *testing.T, got *corev1.Secret)
	}{
		"identical": {existing: func() *corev1.Secret { return desired.DeepCopy() }},
		"foreign annotation kept, no change": {existing: func() *corev1.Secret {
			s := desired.DeepCopy()
			s.Annotations["note"] = "x"
			return s
		}},
		"stale cluster label removed": {wantChange: true, existing: func() *corev1.Secret {
			s := desired.DeepCopy()
			s.Labels["env"] = "old"
			return s
		}, check: func(t *testing.T, got *corev1.Secret) {
			if _, ok := got.Labels["env"]; ok {
				t.Fatal("stale label kept")
			}
		}},
		"data drift": {wantChange: true, existing: func() *corev1.Secret {
			s := desired.DeepCopy()
			s.Data["server"] = []byte("https://elsewhere")
			s.Data["config"] = []byte("{}")
			return s
		}, check: func(t *testing.T, got *corev1.Secret) {
			if diff := cmp.Diff(desired.Data, got.Data); diff != "" {
				t.Fatalf("data (-want +got):\n%s", diff)
			}
		}},
		"joins another GitOpsCluster's Secret, which keeps its owner": {
			wantChange: true,
			wantOwners: []types.NamespacedName{ownerKey(gc), other},
			existing: func() *corev1.Secret {
				s := desired.DeepCopy()
				withOwners(s, []types.NamespacedName{other})
				return s
			},
		},
		"already one of two owners, no change": {existing: func() *corev1.Secret {
			s := desired.DeepCopy()
			withOwners(s, []types.NamespacedName{other, ownerKey(gc)})
			return s
		}},
		"a cluster label of another owner's older view is corrected, the owners kept": {
			wantChange: true,
			wantOwners: []types.NamespacedName{ownerKey(gc), other},
			existing: func() *corev1.Secret {
				s := desired.DeepCopy()
				withOwners(s, []types.NamespacedName{other, ownerKey(gc)})
				s.Labels["env"] = "old"
				return s
			},
		},
		"single-owner marks of an earlier version become owner marks": {
			wantChange: true,
			wantOwners: []types.NamespacedName{ownerKey(gc), other},
			existing:   func() *corev1.Secret { return legacySecret(desired, other) },
			check: func(t *testing.T, got *corev1.Secret) {
				for _, k := range []string{legacyLabelOwnerNamespace, legacyLabelOwnerName} {
					if _, ok := got.Labels[k]; ok {
						t.Fatalf("label %s kept", k)
					}
				}
				if _, ok := got.Annotations[legacyAnnotationOwner]; ok {
					t.Fatal("single-owner annotation kept")
				}
				if len(got.OwnerReferences) != 0 {
					t.Fatalf("owner references %v kept", got.OwnerReferences)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			existing := tc.existing()
			before := existing.DeepCopy()
			got := mergeClusterSecret(existing, desired)
			if diff := cmp.Diff(before, existing); diff != "" {
				t.Fatalf("existing mutated:\n%s", diff)
			}
			if (got != nil) != tc.wantChange {
				t.Fatalf("changed = %v, want %v", got != nil, tc.wantChange)
			}
			if got == nil {
				return
			}
			if tc.wantOwners != nil {
				if diff := cmp.Diff(tc.wantOwners, ownersOf(got)); diff != "" {
					t.Fatalf("owners (-want +got):\n%s", diff)
				}
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestGeneratorConfig(t *testing.T) {
	cms := desiredConfigMaps("argocd")
	if len(cms) != 2 || cms[0].Name != "ocm-placement-generator" || cms[1].Name != "acm-placement" {
		t.Fatalf("ConfigMaps %v", cms)
	}
	want := map[string]string{
		"apiVersion":    "cluster.open-cluster-management.io/v1beta1",
		"kind":          "placementdecisions",
		"statusListKey": "decisions",
		"matchKey":      "clusterName",
	}
	for _, cm := range cms {
		if diff := cmp.Diff(want, cm.Data); diff != "" {
			t.Fatalf("%s data (-want +got):\n%s", cm.Name, diff)
		}
	}
	role, rb := desiredRole("argocd"), desiredRoleBinding("argocd", DefaultApplicationSetControllerServiceAccount)
	if role.Name != "argocd-applicationset-controller-placement" || rb.RoleRef.Name != role.Name {
		t.Fatalf("role %s, binding to %s", role.Name, rb.RoleRef.Name)
	}
	if rb.Subjects[0].Name != "argocd-applicationset-controller" || rb.Subjects[0].Namespace != "argocd" {
		t.Fatalf("subjects %v", rb.Subjects)
	}
}
