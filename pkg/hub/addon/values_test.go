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

// validSettings has a valid value of every agent variable and the chart value it becomes.
var validSettings = map[string]struct {
	value string
	want  any
}{
	VariableWatchNamespaces:    {" argocd,gitops ,, argocd", []any{"argocd", "gitops"}},
	VariableLogLevel:           {" 6 ", float64(6)},
	VariableLoggingFormat:      {"json", "json"},
	VariableArgoCDNamespace:    {" openshift-gitops ", "openshift-gitops"},
	VariableRedisAddress:       {"redis.openshift-gitops.svc:6380", "redis.openshift-gitops.svc:6380"},
	VariableRedisSecret:        {"gitops-redis.auth", "gitops-redis.auth"},
	VariableRedisCompression:   {"none", "none"},
	VariableKubeAPIQPS:         {"50.5", 50.5},
	VariableKubeAPIBurst:       {"100", float64(100)},
	VariableHubKubeAPIQPS:      {"0.5", 0.5},
	VariableHubKubeAPIBurst:    {" 10", float64(10)},
	VariableHubReconnectJitter: {"90s", "1m30s"},
	// "False" is a bool strconv reads: it passes the flag as false.
	VariableResourceTrees:        {" False", "false"},
	VariableResourceTreeInterval: {"90s", "1m30s"},
}

// settingsCase is a case of TestToAgentSettingsValues: the variables give want, or an error
// containing each of wantErr.
type settingsCase struct {
	name      string
	variables []addonv1alpha1.CustomizedVariable
	want      addonfactory.Values
	wantErr   []string
}

func TestToAgentSettingsValues(t *testing.T) {
	for name := range agentVariables {
		if _, ok := validSettings[name]; !ok {
			t.Errorf("variable %s has no valid value in validSettings: its cases are missing", name)
		}
	}
	tests := []settingsCase{{
		name: "no variables: nothing overridden",
		want: addonfactory.Values{},
	}, {
		name:      "unknown variables ignored",
		variables: []addonv1alpha1.CustomizedVariable{{Name: "Image", Value: "evil.example.com/agent"}, {Name: "hubQPS", Value: "9"}},
		want:      addonfactory.Values{},
	}, {
		name:      "invalid namespace in the list",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableWatchNamespaces, Value: "argocd,Not_A_Namespace"}},
		wantErr:   []string{`customizedVariable watchNamespaces "argocd,Not_A_Namespace": "Not_A_Namespace" is not a namespace name`},
	}, {
		name:      "empty namespace list",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableWatchNamespaces, Value: " , "}},
		wantErr:   []string{"customizedVariable watchNamespaces", "no namespace given"},
	}, {
		name:      "level not a number",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableLogLevel, Value: "verbose"}},
		wantErr:   []string{`customizedVariable logLevel "verbose": not a whole number`},
	}, {
		name:      "level out of range",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableLogLevel, Value: "11"}},
		wantErr:   []string{`customizedVariable logLevel "11"`, "outside 0..10"},
	}, {
		name:      "invalid Argo CD namespace",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableArgoCDNamespace, Value: "Argo_CD"}},
		wantErr:   []string{`customizedVariable argocdNamespace "Argo_CD": not a namespace name`},
	}, {
		name:      "Redis address without a port",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableRedisAddress, Value: "argocd-redis"}},
		wantErr:   []string{`customizedVariable redisAddress "argocd-redis": not host:port`},
	}, {
		name:      "Redis Secret not a Secret name",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableRedisSecret, Value: "Redis_Password"}},
		wantErr:   []string{`customizedVariable redisSecret "Redis_Password": not a Secret name`},
	}, {
		name:      "logging format the agent does not register",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableLoggingFormat, Value: "logfmt"}},
		wantErr:   []string{`customizedVariable loggingFormat "logfmt": not text or json`},
	}, {
		name:      "Redis compression Argo CD does not know",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableRedisCompression, Value: "zstd"}},
		wantErr:   []string{`customizedVariable redisCompression "zstd": not gzip or none`},
	}, {
		name: "QPS not positive, not a number, beyond float32",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableKubeAPIQPS, Value: "0"}, {Name: VariableHubKubeAPIQPS, Value: "fast"}, {Name: VariableHubKubeAPIQPS, Value: "1e39"},
			{Name: VariableKubeAPIQPS, Value: "-5"}, {Name: VariableHubKubeAPIQPS, Value: "NaN"}},
		wantErr: []string{
			`customizedVariable kubeAPIQPS "0": not a positive number of requests per second`,
			`customizedVariable hubKubeAPIQPS "fast": not a positive number`,
			`customizedVariable hubKubeAPIQPS "1e39": not a positive number`,
			`customizedVariable kubeAPIQPS "-5": not a positive number`,
			`customizedVariable hubKubeAPIQPS "NaN": not a positive number`,
		},
	}, {
		name: "burst not a positive whole number",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableKubeAPIBurst, Value: "0"}, {Name: VariableHubKubeAPIBurst, Value: "2.5"}},
		wantErr: []string{
			`customizedVariable kubeAPIBurst "0": not a positive whole number of requests`,
			`customizedVariable hubKubeAPIBurst "2.5": not a positive whole number of requests`,
		},
	}, {
		name: "reconnect jitter not a duration, negative, past ten minutes",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableHubReconnectJitter, Value: "30"}, {Name: VariableHubReconnectJitter, Value: "-1s"},
			{Name: VariableHubReconnectJitter, Value: "1h"}},
		wantErr: []string{
			`customizedVariable hubReconnectJitter "30": not a duration from 0s to 10m0s`,
			`customizedVariable hubReconnectJitter "-1s": not a duration`,
			`customizedVariable hubReconnectJitter "1h": not a duration`,
		},
	}, {
		name: "resource trees neither true nor false, interval out of bounds",
		variables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableResourceTrees, Value: "on"}, {Name: VariableResourceTreeInterval, Value: "10"},
			{Name: VariableResourceTreeInterval, Value: "500ms"}, {Name: VariableResourceTreeInterval, Value: "1h"}},
		wantErr: []string{
			`customizedVariable resourceTrees "on": not true or false`,
			`customizedVariable resourceTreeInterval "10": not a duration from 1s to 10m0s`,
			`customizedVariable resourceTreeInterval "500ms": not a duration`,
			`customizedVariable resourceTreeInterval "1h": not a duration`,
		},
	}, {
		name:      "resource trees true: passed on",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableResourceTrees, Value: "1"}},
		want:      addonfactory.Values{"resourceTrees": "true"},
	}, {
		name:      "reconnect jitter 0s: at once, passed on",
		variables: []addonv1alpha1.CustomizedVariable{{Name: VariableHubReconnectJitter, Value: "0"}},
		want:      addonfactory.Values{"hubReconnectJitter": "0s"},
	}}
	// Every variable valid, alone; and every one absent while all the others are set.
	all := addonfactory.Values{}
	for name, valid := range validSettings {
		tests = append(tests, settingsCase{
			name:      name + " valid",
			variables: []addonv1alpha1.CustomizedVariable{{Name: name, Value: valid.value}},
			want:      addonfactory.Values{name: valid.want},
		})
		all[name] = valid.want
	}
	for absent := range validSettings {
		var variables []addonv1alpha1.CustomizedVariable
		want := addonfactory.Values{}
		for name, valid := range validSettings {
			if name != absent {
				variables = append(variables, addonv1alpha1.CustomizedVariable{Name: name, Value: valid.value})
				want[name] = all[name]
			}
		}
		tests = append(tests, settingsCase{name: absent + " absent, the others set: not in the values", variables: variables, want: want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: tt.variables})
			got, err := toAgentSettingsValues(*config)
			if len(tt.wantErr) > 0 {
				if err == nil || !strings.Contains(err.Error(), "AddOnDeploymentConfig "+testConfigNamespace+"/argocd-pull") {
					t.Fatalf("error = %v, want one naming the config", err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error = %v, want it to contain %q", err, want)
					}
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
		{APIGroups: []string{"apps.open-cluster-management.io"}, Resources: []string{"applicationstatusreports", "applicationresourcetrees"},
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
	reportCount, treeCount := quota.Spec.Hard[ReportCountResource], quota.Spec.Hard[TreeCountResource]
	if len(quota.Spec.Hard) != 2 || reportCount.Value() != 7 || treeCount.Value() != 7 {
		t.Errorf("ResourceQuota hard = %v, want only %s: 7 and %s: 7", quota.Spec.Hard, ReportCountResource, TreeCountResource)
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
