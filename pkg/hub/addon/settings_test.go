package addon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// An invalid setting fails the rendering with an error naming its variable, which
// addon-framework reports on the ManagedClusterAddOn (test/integration/addon).
func TestManifestsInvalidAgentSettings(t *testing.T) {
	for _, invalid := range []addonv1alpha1.CustomizedVariable{
		{Name: VariableLogLevel, Value: "verbose"},
		{Name: VariableLoggingFormat, Value: "JSON"},
		{Name: VariableRedisSecret, Value: "Not a Secret"},
		{Name: VariableRedisCompression, Value: "lz4"},
		{Name: VariableKubeAPIQPS, Value: "-1"},
		{Name: VariableKubeAPIBurst, Value: "many"},
		{Name: VariableHubKubeAPIQPS, Value: "0"},
		{Name: VariableHubKubeAPIBurst, Value: "-3"},
		{Name: VariableHubReconnectJitter, Value: "soon"},
		{Name: VariableResourceTrees, Value: "yes"},
		{Name: VariableResourceTreeInterval, Value: "0s"},
	} {
		t.Run(invalid.Name, func(t *testing.T) {
			config := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{invalid}})
			_, err := render(t, testCluster(nil), testAddon("", config), config)
			if want := "customizedVariable " + invalid.Name + " "; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Manifests error = %v, want one naming %s", err, invalid.Name)
			}
		})
	}
}

// Every agent setting reaches its flag: with all of them set, the agent's arguments are
// the defaults' and one flag each, and the Redis Role names the Secret the agent reads.
func TestManifestsAgentSettings(t *testing.T) {
	var variables []addonv1alpha1.CustomizedVariable
	for name, valid := range validSettings {
		variables = append(variables, addonv1alpha1.CustomizedVariable{Name: name, Value: valid.value})
	}
	config := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: variables})
	objects, err := render(t, testCluster(nil), testAddon("", config), config)
	if err != nil {
		t.Fatalf("Manifests: %v", err)
	}
	want := []string{
		"agent",
		"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig",
		"--cluster-name=cluster1",
		"--addon-namespace=open-cluster-management-agent-addon",
		"--watch-namespaces=argocd,gitops",
		"--argocd-namespace=openshift-gitops",
		"--redis-address=redis.openshift-gitops.svc:6380",
		"--redis-secret=gitops-redis.auth",
		"--redis-compression=none",
		"--kube-api-qps=50.5",
		"--kube-api-burst=100",
		"--hub-kube-api-qps=0.5",
		"--hub-kube-api-burst=10",
		"--hub-reconnect-jitter=1m30s",
		"--resource-trees=false",
		"--resource-tree-interval=1m30s",
		"--health-probe-bind-address=:8091",
		"--metrics-bind-address=:8090",
		"--v=6",
		"--logging-format=json",
	}
	if diff := cmp.Diff(want, findDeployment(t, objects).Spec.Template.Spec.Containers[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	for _, o := range objects {
		if role, ok := o.(*rbacv1.Role); ok && role.Name == "argocd-pull-agent-argocd-redis" {
			if role.Namespace != "openshift-gitops" || len(role.Rules) != 1 || !cmp.Equal(role.Rules[0].ResourceNames, []string{"gitops-redis.auth"}) {
				t.Errorf("Redis Role %s/%s rules %+v, want get of Secret gitops-redis.auth in openshift-gitops", role.Namespace, role.Name, role.Rules)
			}
			return
		}
	}
	t.Error("no Redis Role rendered")
}

// The Redis Role of an agent with the defaults names Argo CD's own Secret, the agent's
// --redis-secret default.
func TestManifestsDefaultRedisSecret(t *testing.T) {
	objects, err := render(t, testCluster(nil), testAddon("", nil), nil)
	if err != nil {
		t.Fatalf("Manifests: %v", err)
	}
	for _, o := range objects {
		if role, ok := o.(*rbacv1.Role); ok && role.Name == "argocd-pull-agent-argocd-redis" {
			if len(role.Rules) != 1 || !cmp.Equal(role.Rules[0].ResourceNames, []string{"argocd-redis"}) {
				t.Errorf("Redis Role rules %+v, want get of Secret argocd-redis", role.Rules)
			}
			return
		}
	}
	t.Error("no Redis Role rendered")
}

// TestDocumentedAgentSettings reads the table of docs/configuring-agents.md: it lists
// every variable the agent understands, and each, set alone, reaches the agent flag the
// table names.
func TestDocumentedAgentSettings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "configuring-agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(data), "The agent flags no variable sets")
	_, section, found := strings.Cut(section, "### Agent settings (`customizedVariables`)")
	if !found {
		t.Fatal("docs/configuring-agents.md has no section \"Agent settings (`customizedVariables`)\"")
	}
	documented := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 5 {
			continue
		}
		documented[strings.Trim(cells[0], "| `")] = strings.Trim(cells[1], "`")
	}
	for name := range agentVariables {
		if _, ok := documented[name]; !ok {
			t.Errorf("variable %s is not in the table of docs/configuring-agents.md", name)
		}
	}
	for name, flag := range documented {
		t.Run(name, func(t *testing.T) {
			valid, ok := validSettings[name]
			if !ok {
				t.Fatalf("the documented variable %s is not one the agent understands", name)
			}
			config := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{
				CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: name, Value: valid.value}}})
			objects, err := render(t, testCluster(nil), testAddon("", config), config)
			if err != nil {
				t.Fatalf("Manifests: %v", err)
			}
			args := findDeployment(t, objects).Spec.Template.Spec.Containers[0].Args
			want := flag + "=" + strings.Trim(fmt.Sprint(valid.want), "[]")
			if name == VariableWatchNamespaces {
				want = flag + "=argocd,gitops"
			}
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		})
	}
}
