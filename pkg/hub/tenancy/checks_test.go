package tenancy

import (
	"strings"
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// tenancyApp is a pulled Application in namespace ns targeting cluster1, deploying the
// guestbook repository into namespace guestbook.
func tenancyApp(ns string) *argov1alpha1.Application {
	return builders.Application("a").Namespace(ns).Pulled().Cluster("cluster1").Build()
}

// TestCheckAppNamespace: Argo CD's own namespace always; another one only when
// application.namespaces or the extra option accepts it, with Argo CD's patterns.
func TestCheckAppNamespace(t *testing.T) {
	params := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{KeyApplicationNamespaces: v}}
	}
	tests := map[string]struct {
		ns     string
		params *corev1.ConfigMap
		extra  []string
		allow  bool
	}{
		"Argo CD's namespace, no ConfigMap": {ns: "argocd", allow: true},
		"other namespace, no ConfigMap":     {ns: "team-a"},
		"listed":                            {ns: "team-a", params: params("team-b, team-a"), allow: true},
		"not listed":                        {ns: "team-c", params: params("team-a,team-b")},
		"glob":                              {ns: "team-a", params: params("team-*"), allow: true},
		"glob does not match":               {ns: "other", params: params("team-*")},
		"regexp":                            {ns: "team-a", params: params("/^team-[a-z]$/"), allow: true},
		"extra namespace option":            {ns: "team-a", extra: []string{"team-a"}, allow: true},
		"prefix is not a match":             {ns: "team-ab", params: params("team-a")},
		"empty list":                        {ns: "team-a", params: params("")},
		"Argo CD's namespace, others only listed": {ns: "argocd", params: params("team-a"), allow: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			o.ApplicationNamespaces = tt.extra
			p := checkAppNamespace(o, tenancyApp(tt.ns), tt.params)
			wantVerdict(t, p, tt.allow, ReasonNamespaceNotPermitted, "namespace '"+tt.ns+"' is not permitted", "application.namespaces")
		})
	}
}

// TestCheckProject: the project must exist and permit the namespace, every repository and
// the target cluster, named as its cluster Secret names it, with the destination namespace.
func TestCheckProject(t *testing.T) {
	dest := &argov1alpha1.Cluster{Name: "cluster1", Server: apps.PlaceholderServer("cluster1")}
	open := func() *argov1alpha1.AppProject {
		return &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd"},
			Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"}, SourceNamespaces: []string{"*"},
				Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}}}}
	}
	with := func(edit func(*argov1alpha1.AppProject)) *argov1alpha1.AppProject { p := open(); edit(p); return p }
	dests := func(d ...argov1alpha1.ApplicationDestination) func(*argov1alpha1.AppProject) {
		return func(p *argov1alpha1.AppProject) { p.Spec.Destinations = d }
	}
	tests := map[string]struct {
		ns         string
		proj       *argov1alpha1.AppProject
		dest       *argov1alpha1.Cluster
		wantReason string
		wantText   string
	}{
		"open project":            {proj: open()},
		"no project":              {wantReason: ReasonProjectNotFound, wantText: "Application referencing project default which does not exist"},
		"Argo CD's own namespace": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceNamespaces = nil })},
		"source namespace listed": {ns: "team-a", proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceNamespaces = []string{"team-*"} })},
		"source namespace not listed": {ns: "team-a", proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceNamespaces = []string{"team-b"} }),
			wantReason: ReasonProjectNamespaceRefused, wantText: "application 'a' in namespace 'team-a' is not allowed to use project default"},
		"repository listed": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceRepos = []string{builders.GuestbookRepoURL} })},
		"repository not listed": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceRepos = []string{"https://example.com/*"} }),
			wantReason: ReasonProjectRepoRefused, wantText: "application repo " + builders.GuestbookRepoURL + " is not permitted in project 'default'"},
		"repository denied": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.SourceRepos = []string{"*", "!" + builders.GuestbookRepoURL} }),
			wantReason: ReasonProjectRepoRefused},
		"destination by cluster name": {proj: with(dests(argov1alpha1.ApplicationDestination{Name: "cluster1", Namespace: "guestbook"}))},
		"destination by Secret server": {proj: with(dests(argov1alpha1.ApplicationDestination{Server: "https://cluster1.example.com", Namespace: "*"})),
			dest: &argov1alpha1.Cluster{Name: "cluster1", Server: "https://cluster1.example.com"}},
		"destination by name glob": {proj: with(dests(argov1alpha1.ApplicationDestination{Name: "cluster*", Namespace: "guest*"}))},
		"other cluster": {proj: with(dests(argov1alpha1.ApplicationDestination{Name: "cluster2", Namespace: "*"})),
			wantReason: ReasonProjectDestRefused, wantText: "application destination name 'cluster1'"},
		"other namespace": {proj: with(dests(argov1alpha1.ApplicationDestination{Name: "cluster1", Namespace: "kube-system"})),
			wantReason: ReasonProjectDestRefused, wantText: "namespace 'guestbook' do not match any of the allowed destinations in project 'default'"},
		"cluster denied": {proj: with(dests(argov1alpha1.ApplicationDestination{Name: "!cluster1", Namespace: "*"}, argov1alpha1.ApplicationDestination{Server: "*", Namespace: "*"})),
			wantReason: ReasonProjectDestRefused},
		"project-scoped clusters only, cluster not in project": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.PermitOnlyProjectScopedClusters = true }),
			wantReason: ReasonProjectDestRefused},
		"project-scoped clusters only, cluster in project": {proj: with(func(p *argov1alpha1.AppProject) { p.Spec.PermitOnlyProjectScopedClusters = true }),
			dest: &argov1alpha1.Cluster{Name: "cluster1", Server: dest.Server, Project: "default"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ns := tt.ns
			if ns == "" {
				ns = "argocd"
			}
			d := tt.dest
			if d == nil {
				d = dest
			}
			p := checkProject(DefaultOptions(), tenancyApp(ns), tt.proj, d)
			wantVerdict(t, p, tt.wantReason == "", tt.wantReason, tt.wantText, "AppProject argocd/default")
		})
	}
}

// TestCheckClusterSets: the cluster must be selected by a set bound to the namespace,
// whichever selector type the set has.
func TestCheckClusterSets(t *testing.T) {
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1",
		Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "team-a", "env": "prod"}}}
	exclusive := func(name string) boundSet {
		return boundSet{set: &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	bySelector := func(name string, sel *metav1.LabelSelector) boundSet {
		return boundSet{set: &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: sel}}}}
	}
	tests := map[string]struct {
		sets     []boundSet
		allow    bool
		wantText string
	}{
		"its set bound":               {sets: []boundSet{exclusive("team-a")}, allow: true},
		"another set bound":           {sets: []boundSet{exclusive("team-b")}, wantText: "(bound: team-b)"},
		"no set bound":                {wantText: "(bound: none)"},
		"global set (empty selector)": {sets: []boundSet{bySelector("global", &metav1.LabelSelector{})}, allow: true},
		"label selector matches":      {sets: []boundSet{exclusive("team-b"), bySelector("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}})}, allow: true},
		"label selector does not match": {sets: []boundSet{bySelector("dev", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}})},
			wantText: "(bound: dev)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := checkClusterSets(tenancyApp("team-a"), cluster, tt.sets)
			wantVerdict(t, p, tt.allow, ReasonClusterSetNotBound, tt.wantText, "ManagedCluster cluster1", "bound to namespace team-a", "clusteradm clusterset bind")
		})
	}
}

// wantVerdict requires p to allow (nil) when allow is true, else to be an
// InvalidSpecError of reason whose message holds texts.
func wantVerdict(t *testing.T, p *Refusal, allow bool, reason string, texts ...string) {
	t.Helper()
	switch {
	case allow && p != nil:
		t.Fatalf("refused: %s", p.Message)
	case allow:
		return
	case p == nil:
		t.Fatal("allowed, want refused")
	}
	if p.Condition() != pullmodel.ConditionInvalidSpec || p.Reason != reason {
		t.Errorf("got %s/%s, want %s/%s", p.Condition(), p.Reason, pullmodel.ConditionInvalidSpec, reason)
	}
	for _, text := range texts {
		if !strings.Contains(p.Message, text) {
			t.Errorf("message %q does not contain %q", p.Message, text)
		}
	}
}
