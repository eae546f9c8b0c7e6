package chart_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/lint/support"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/resourcetree"
)

// managerOptions are the manager's options as its Deployment's arguments set them.
func managerOptions(t *testing.T, objs []*unstructured.Unstructured) *manager.Options {
	t.Helper()
	c, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
	o := manager.NewOptions()
	cmd := &cobra.Command{Use: "manager"}
	o.AddFlags(cmd)
	// Only the manager's own flags: the logging flags belong to the root command.
	var own []string
	for _, a := range args[1:] {
		if !slices.Contains([]string{"--logging-format"}, flagName(a)) {
			own = append(own, a)
		}
	}
	if err := cmd.ParseFlags(own); err != nil {
		t.Fatalf("the manager's arguments %v: %v", args, err)
	}
	return o
}

func flagName(arg string) string {
	for i, r := range arg {
		if r == '=' {
			return arg[:i]
		}
	}
	return arg
}

func TestResourceTreeValuesReachTheManager(t *testing.T) {
	tests := map[string]struct {
		values map[string]any
		want   resourcetree.Options
	}{
		"defaults: on, Argo CD's Redis Service and Secret, gzip": {
			values: map[string]any{},
			want:   resourcetree.Options{Enabled: true, RedisSecret: "argocd-redis", RedisCompression: "gzip"},
		},
		"a Redis of its own": {
			values: map[string]any{"resourceTrees": map[string]any{"redis": map[string]any{
				"address": "argocd-redis-ha-haproxy.argocd.svc:6379", "secret": "hub-redis", "compression": "none"}}},
			want: resourcetree.Options{Enabled: true, RedisAddress: "argocd-redis-ha-haproxy.argocd.svc:6379", RedisSecret: "hub-redis",
				RedisCompression: "none"},
		},
		"off": {
			values: map[string]any{"resourceTrees": map[string]any{"enabled": false}},
			want:   resourcetree.Options{RedisSecret: "argocd-redis", RedisCompression: "gzip"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			objs, _ := render(t, tt.values)
			if got := managerOptions(t, objs).Controllers.ResourceTree; got != tt.want {
				t.Errorf("the manager's resource tree options = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTheManagerMayReadTheRedisSecretOnly: a Role in Argo CD's namespace lets the manager
// get the Redis password's Secret, by name, and nothing else; none when trees are off.
func TestTheManagerMayReadTheRedisSecretOnly(t *testing.T) {
	objs, _ := render(t, map[string]any{"tenancy": map[string]any{"argocdNamespace": "openshift-gitops"},
		"resourceTrees": map[string]any{"redis": map[string]any{"secret": "hub-redis"}}})
	role := &rbacv1.Role{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "Role", "-manager-argocd-redis").Object, role); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hub-redis"}, Verbs: []string{"get"}}}
	if role.Namespace != "openshift-gitops" || !slices.EqualFunc(role.Rules, want, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
			slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.Verbs, b.Verbs)
	}) {
		t.Errorf("Role %s/%s rules %+v, want %+v in openshift-gitops", role.Namespace, role.Name, role.Rules, want)
	}
	binding := find(t, objs, "RoleBinding", "-manager-argocd-redis")
	if binding.GetNamespace() != "openshift-gitops" {
		t.Errorf("RoleBinding in %s, want openshift-gitops", binding.GetNamespace())
	}

	objs, _ = render(t, map[string]any{"resourceTrees": map[string]any{"enabled": false}})
	for _, o := range objs {
		if (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasSuffix(o.GetName(), "-manager-argocd-redis") {
			t.Errorf("resource trees off, yet %s %s is rendered", o.GetKind(), o.GetName())
		}
	}
}

func TestSchemaRefusesBadResourceTreeValues(t *testing.T) {
	for name, tc := range map[string]struct {
		redis map[string]any
		want  string // in the linter's error
	}{
		"a compression Argo CD does not know": {map[string]any{"compression": "zstd"}, "/resourceTrees/redis/compression"},
		"an address without a port":           {map[string]any{"address": "argocd-redis.argocd.svc"}, "/resourceTrees/redis/address"},
		"no Secret name":                      {map[string]any{"secret": ""}, "/resourceTrees/redis/secret"},
		"misspelt value":                      {map[string]any{"password": "x"}, "password"},
	} {
		t.Run(name, func(t *testing.T) {
			var errs []string
			for _, m := range lintMessages(t, map[string]any{"resourceTrees": map[string]any{"redis": tc.redis}}) {
				if m.Severity == support.ErrorSev {
					errs = append(errs, m.Error())
				}
			}
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("want a lint error naming %q, got %v", tc.want, errs)
			}
		})
	}
}
