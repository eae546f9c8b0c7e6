package addon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"
)

func metaOf(o runtime.Object) (metav1.Object, error) { return meta.Accessor(o) }

func TestToAgentSettingsValues(t *testing.T) {
	tests := []struct {
		name      string
		variables []addonv1alpha1.CustomizedVariable
		want      addonfactory.Values
		wantErr   string
	}{{
		name: "no variables: nothing overridden",
		want: addonfactory.Values{},
	}, {
		name: "namespaces trimmed and de-duplicated, level parsed, unknown variables ignored",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableWatchNamespaces, Value: " argocd,gitops ,, argocd"},
			{Name: VariableLogLevel, Value: " 6 "},
			{Name: "Image", Value: "evil.example.com/agent"},
		},
		want: addonfactory.Values{"watchNamespaces": []any{"argocd", "gitops"}, "logLevel": float64(6)},
	}, {
		name:      "invalid namespace",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableWatchNamespaces, Value: "argocd,Not_A_Namespace"}},
		wantErr:   `"Not_A_Namespace" is not a namespace name`,
	}, {
		name:      "empty namespace list",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableWatchNamespaces, Value: " , "}},
		wantErr:   "no namespace given",
	}, {
		name: "Argo CD's namespace and Redis address",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableArgoCDNamespace, Value: " openshift-gitops "},
			{Name: VariableRedisAddress, Value: "redis.openshift-gitops.svc:6380"},
		},
		want: addonfactory.Values{"argocdNamespace": "openshift-gitops", "redisAddress": "redis.openshift-gitops.svc:6380"},
	}, {
		name:      "Redis address without a port",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableRedisAddress, Value: "argocd-redis"}},
		wantErr:   `"argocd-redis" is not host:port`,
	}, {
		name:      "invalid Argo CD namespace",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableArgoCDNamespace, Value: "Argo_CD"}},
		wantErr:   `"Argo_CD" is not a namespace name`,
	}, {
		name:      "level out of range",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableLogLevel, Value: "11"}},
		wantErr:   "outside 0..10",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: tt.variables})
			got, err := toAgentSettingsValues(*config)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "AddOnDeploymentConfig "+testConfigNamespace+"/argocd-pull") {
					t.Fatalf("error = %v, want one naming the config and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentInstallNamespace(t *testing.T) {
	tests := []struct {
		name   string
		addon  *addonv1alpha1.ManagedClusterAddOn
		config *addonv1alpha1.AddOnDeploymentConfig
		want   string
	}{{
		name:  "no config: empty, the framework uses spec.installNamespace or its default",
		addon: testAddon("custom", nil),
		want:  "",
	}, {
		name:   "config with the CRD-defaulted namespace: empty, so spec.installNamespace still applies",
		addon:  testAddon("custom", testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "open-cluster-management-agent-addon"})),
		config: testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "open-cluster-management-agent-addon"}),
		want:   "",
	}, {
		name:   "config naming a namespace: that one",
		addon:  testAddon("custom", testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "agents"})),
		config: testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "agents"}),
		want:   "agents",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getter := configGetter{}
			if tt.config != nil {
				getter[tt.config.Namespace+"/"+tt.config.Name] = tt.config
			}
			got, err := agentInstallNamespace(getter)(tt.addon)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Errorf("namespace = %q, want %q", got, tt.want)
			}
		})
	}
}

type configGetter map[string]*addonv1alpha1.AddOnDeploymentConfig

func (g configGetter) Get(_ context.Context, namespace, name string) (*addonv1alpha1.AddOnDeploymentConfig, error) {
	return g[namespace+"/"+name], nil
}

func TestOptionsValidate(t *testing.T) {
	valid := NewOptions()
	if err := valid.Validate(); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
	invalid := &Options{AgentImagePullPolicy: "Sometimes", AgentImagePullSecrets: []string{"regcred", "Not_A_Name"},
		WatchNamespaces: []string{"UPPER"}, LogLevel: -1}
	err := invalid.Validate()
	for _, want := range []string{"--agent-image", "--agent-image-pull-policy", `--agent-image-pull-secrets: "Not_A_Name"`,
		"--agent-watch-namespaces", "--agent-log-level"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}

func TestAgentHubPermission(t *testing.T) {
	ctx := context.Background()
	addon := testAddon("", nil)
	// A RoleBinding of an earlier version, bound to a per-cluster Role of the same name:
	// its roleRef cannot be updated, so it must be replaced.
	earlier := AgentHubRoleBinding("cluster1", addon)
	earlier.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: AgentHubRoleName}
	kubeClient := kubefake.NewClientset(earlier)
	apply := agentHubPermission(kubeClient, 7)
	// Twice: the second call must find everything in place.
	for range 2 {
		if err := apply(testCluster(nil), addon); err != nil {
			t.Fatalf("applying permissions: %v", err)
		}
	}
	if roles, err := kubeClient.RbacV1().Roles("cluster1").List(ctx, metav1.ListOptions{}); err != nil || len(roles.Items) > 0 {
		t.Errorf("Roles in the cluster namespace = %v (err %v), want none: the chart's ClusterRole is bound", roles, err)
	}
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps.open-cluster-management.io"}, Resources: []string{"applicationstatusreports"},
			Verbs: []string{"create", "patch", "delete", "list", "watch"}},
		{APIGroups: []string{"addon.open-cluster-management.io"}, Resources: []string{"managedclusteraddons"},
			ResourceNames: []string{"argocd-pull"}, Verbs: []string{"get"}},
		{APIGroups: []string{"addon.open-cluster-management.io"}, Resources: []string{"managedclusteraddons/status"},
			ResourceNames: []string{"argocd-pull"}, Verbs: []string{"patch"}},
	}
	if diff := cmp.Diff(wantRules, AgentHubRules()); diff != "" {
		t.Errorf("agent hub rules (-want +got):\n%s", diff)
	}
	binding, err := kubeClient.RbacV1().RoleBindings("cluster1").Get(ctx, AgentHubRoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting RoleBinding: %v", err)
	}
	if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentHubRoleName}); binding.RoleRef != want {
		t.Errorf("RoleBinding roleRef = %+v, want %+v", binding.RoleRef, want)
	}
	wantSubjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind,
		Name: "system:open-cluster-management:cluster:cluster1:addon:argocd-pull"}}
	if diff := cmp.Diff(wantSubjects, binding.Subjects); diff != "" {
		t.Errorf("RoleBinding subjects (-want +got; the cluster's group only):\n%s", diff)
	}
	quota, err := kubeClient.CoreV1().ResourceQuotas("cluster1").Get(ctx, AgentReportQuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting ResourceQuota: %v", err)
	}
	if got := quota.Spec.Hard[ReportCountResource]; len(quota.Spec.Hard) != 1 || got.Value() != 7 {
		t.Errorf("ResourceQuota hard = %v, want only %s: 7", quota.Spec.Hard, ReportCountResource)
	}
	for _, owned := range []metav1.Object{binding, quota} {
		refs := owned.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "ManagedClusterAddOn" || refs[0].UID != addon.UID {
			t.Errorf("%s owner references = %+v, want the ManagedClusterAddOn", owned.GetName(), refs)
		}
	}
}

// TestExampleAddOnDeploymentConfig renders the agent with
// examples/agents/01-addondeploymentconfig.yaml, which says it is safe to apply as it is:
// its settings reach the agent, and it changes nothing that needs something of the
// cluster (the image, node placement, a proxy, resources).
func TestExampleAddOnDeploymentConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "agents", "01-addondeploymentconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := &addonv1alpha1.AddOnDeploymentConfig{}
	if err := yaml.UnmarshalStrict(data, config); err != nil {
		t.Fatalf("decoding the example: %v", err)
	}
	objects, err := render(t, testCluster(nil), testAddon("", config), config)
	if err != nil {
		t.Fatalf("rendering with the example: %v", err)
	}
	plain, err := render(t, testCluster(nil), testAddon("", nil), nil)
	if err != nil {
		t.Fatalf("rendering without a configuration: %v", err)
	}
	d, want := findDeployment(t, objects), findDeployment(t, plain)
	c := d.Spec.Template.Spec.Containers[0]
	if want := wantArgs("open-cluster-management-agent-addon", "argocd", "2"); !cmp.Equal(want, c.Args) {
		t.Errorf("args = %v, want %v", c.Args, want)
	}
	wantContainer := want.Spec.Template.Spec.Containers[0]
	if c.Image != wantContainer.Image || !cmp.Equal(c.Env, wantContainer.Env) || !cmp.Equal(c.Resources, wantContainer.Resources) {
		t.Errorf("image %q, env %v, resources %v; want them as without a configuration: %q, %v, %v",
			c.Image, c.Env, c.Resources, wantContainer.Image, wantContainer.Env, wantContainer.Resources)
	}
	if !cmp.Equal(d.Spec.Template.Spec.NodeSelector, want.Spec.Template.Spec.NodeSelector) ||
		!cmp.Equal(d.Spec.Template.Spec.Tolerations, want.Spec.Template.Spec.Tolerations) {
		t.Errorf("node selector %v, tolerations %v; want them as without a configuration", d.Spec.Template.Spec.NodeSelector, d.Spec.Template.Spec.Tolerations)
	}
}
