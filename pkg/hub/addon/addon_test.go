package addon

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonfake "open-cluster-management.io/api/client/addon/clientset/versioned/fake"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

const testConfigNamespace = "open-cluster-management-hub"

func testCluster(annotations map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Annotations: annotations}}
}

// testAddon is cluster1's ManagedClusterAddOn; a non-nil config is its desired
// AddOnDeploymentConfig, as OCM's addon-manager records it in status.configReferences.
func testAddon(installNamespace string, config *addonv1alpha1.AddOnDeploymentConfig) *addonv1alpha1.ManagedClusterAddOn {
	addon := &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: apps.AddonName, Namespace: "cluster1", UID: "mca-uid"},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNamespace},
	}
	if config != nil {
		addon.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{
				Group: utils.AddOnDeploymentConfigGVR.Group, Resource: utils.AddOnDeploymentConfigGVR.Resource},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{
				ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: config.Namespace, Name: config.Name},
				SpecHash:       "hash",
			},
		}}
	}
	return addon
}

func testConfig(spec addonv1alpha1.AddOnDeploymentConfigSpec) *addonv1alpha1.AddOnDeploymentConfig {
	return &addonv1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull", Namespace: testConfigNamespace},
		Spec:       spec,
	}
}

// render renders the agent for addon with config (if any) on the hub.
func render(t *testing.T, cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn,
	config *addonv1alpha1.AddOnDeploymentConfig) ([]runtime.Object, error) {
	t.Helper()
	return renderWithOptions(t, NewOptions(), cluster, addon, config)
}

// renderWithOptions renders as render does, with the manager's options opts.
func renderWithOptions(t *testing.T, opts *Options, cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn,
	config *addonv1alpha1.AddOnDeploymentConfig) ([]runtime.Object, error) {
	t.Helper()
	var objects []runtime.Object
	if config != nil {
		objects = append(objects, config)
	}
	agentAddon, err := NewAgentAddon(kubefake.NewClientset(), addonfake.NewSimpleClientset(objects...), opts)
	if err != nil {
		t.Fatalf("NewAgentAddon: %v", err)
	}
	return agentAddon.Manifests(cluster, addon)
}

func findDeployment(t *testing.T, objects []runtime.Object) *appsv1.Deployment {
	t.Helper()
	for _, o := range objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatalf("no Deployment among %d rendered objects", len(objects))
	return nil
}

func wantArgs(namespace, watch, level string) []string {
	return []string{
		"agent",
		"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig",
		"--cluster-name=cluster1",
		"--addon-namespace=" + namespace,
		"--watch-namespaces=" + watch,
		"--argocd-namespace=argocd",
		"--health-probe-bind-address=:8091",
		"--metrics-bind-address=:8090",
		"--v=" + level,
	}
}

func TestManifestsDeployment(t *testing.T) {
	fullConfig := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{
		AgentInstallNamespace: "open-cluster-management-agent-addon", // the CRD default
		Registries: []addonv1alpha1.ImageMirror{{
			Source: "quay.io/open-cluster-management", Mirror: "registry.example.com/ocm"}},
		NodePlacement: &addonv1alpha1.NodePlacement{
			NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
			Tolerations: []corev1.Toleration{{
				Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
		ProxyConfig: addonv1alpha1.ProxyConfig{
			HTTPProxy: "http://proxy:3128", HTTPSProxy: "http://proxy:3129", NoProxy: "10.0.0.0/8"},
		ResourceRequirements: []addonv1alpha1.ContainerResourceRequirements{
			{ContainerID: "*:*:*", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}},
			{ContainerID: "deployments:argocd-pull-agent:agent", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		},
		CustomizedVariables: []addonv1alpha1.CustomizedVariable{
			{Name: VariableWatchNamespaces, Value: "argocd, openshift-gitops,argocd"},
			{Name: VariableLogLevel, Value: "4"},
			{Name: "global", Value: "ignored: only the agent's variables are read"},
		},
	})

	tests := []struct {
		name    string
		cluster *clusterv1.ManagedCluster
		addon   *addonv1alpha1.ManagedClusterAddOn
		config  *addonv1alpha1.AddOnDeploymentConfig

		wantNamespace    string
		wantArgs         []string
		wantImage        string
		wantNodeSelector map[string]string
		wantTolerations  []corev1.Toleration
		wantEnv          []corev1.EnvVar
		wantResources    corev1.ResourceRequirements
	}{{
		name:          "defaults",
		cluster:       testCluster(nil),
		addon:         testAddon("", nil),
		wantNamespace: "open-cluster-management-agent-addon",
		wantArgs:      wantArgs("open-cluster-management-agent-addon", "argocd", "2"),
		wantImage:     DefaultAgentImage,
		wantResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
	}, {
		name:          "install namespace from the ManagedClusterAddOn (clusteradm addon enable --namespace)",
		cluster:       testCluster(nil),
		addon:         testAddon("gitops-agents", nil),
		wantNamespace: "gitops-agents",
		wantArgs:      wantArgs("gitops-agents", "argocd", "2"),
		wantImage:     DefaultAgentImage,
		wantResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
	}, {
		name:    "AddOnDeploymentConfig: mirror, placement, proxy, resources, agent settings; its defaulted namespace does not override the addon's",
		cluster: testCluster(nil),
		addon:   testAddon("gitops-agents", fullConfig),
		config:  fullConfig,

		wantNamespace:    "gitops-agents",
		wantArgs:         wantArgs("gitops-agents", "argocd,openshift-gitops", "4"),
		wantImage:        "registry.example.com/ocm/argocd-pull-addon:latest",
		wantNodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
		wantTolerations: []corev1.Toleration{{
			Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		wantEnv: []corev1.EnvVar{
			{Name: "HTTP_PROXY", Value: "http://proxy:3128"},
			{Name: "HTTPS_PROXY", Value: "http://proxy:3129"},
			{Name: "NO_PROXY", Value: "10.0.0.0/8"},
		},
		// The last matching entry wins, whole.
		wantResources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}, {
		name:    "AddOnDeploymentConfig naming a non-default install namespace wins",
		cluster: testCluster(nil),
		addon:   testAddon("gitops-agents", testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "from-config"})),
		config:  testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "from-config"}),

		wantNamespace: "from-config",
		wantArgs:      wantArgs("from-config", "argocd", "2"),
		wantImage:     DefaultAgentImage,
		wantResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
	}, {
		name: "image mirrored by the cluster's image-registries annotation",
		cluster: testCluster(map[string]string{clusterv1.ClusterImageRegistriesAnnotationKey: `{"registries":[` +
			`{"source":"quay.io/open-cluster-management","mirror":"mirror.local/ocm"}]}`}),
		addon:         testAddon("", nil),
		wantNamespace: "open-cluster-management-agent-addon",
		wantArgs:      wantArgs("open-cluster-management-agent-addon", "argocd", "2"),
		wantImage:     "mirror.local/ocm/argocd-pull-addon:latest",
		wantResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := render(t, tt.cluster, tt.addon, tt.config)
			if err != nil {
				t.Fatalf("Manifests: %v", err)
			}
			d := findDeployment(t, objects)
			if d.Namespace != tt.wantNamespace {
				t.Errorf("Deployment namespace = %q, want %q", d.Namespace, tt.wantNamespace)
			}
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("want one container, got %d", len(pod.Containers))
			}
			c := pod.Containers[0]
			if diff := cmp.Diff(tt.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if c.Image != tt.wantImage {
				t.Errorf("image = %q, want %q", c.Image, tt.wantImage)
			}
			if diff := cmp.Diff(tt.wantNodeSelector, pod.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTolerations, pod.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEnv, c.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantResources, c.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestManifestsAgentShape checks what does not vary per cluster: the hub kubeconfig
// mounted as a directory, the probes, the ServiceAccount and the managed-cluster RBAC.
func TestManifestsAgentShape(t *testing.T) {
	objects, err := render(t, testCluster(nil), testAddon("gitops-agents", nil), nil)
	if err != nil {
		t.Fatalf("Manifests: %v", err)
	}
	d := findDeployment(t, objects)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]

	wantVolume := corev1.Volume{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "argocd-pull-hub-kubeconfig"}}}
	if diff := cmp.Diff([]corev1.Volume{wantVolume}, pod.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	wantMount := corev1.VolumeMount{Name: "hub-kubeconfig", MountPath: "/managed/hub-kubeconfig", ReadOnly: true}
	if diff := cmp.Diff([]corev1.VolumeMount{wantMount}, c.VolumeMounts); diff != "" {
		t.Errorf("volumeMounts (-want +got; no subPath, so rotated certificates are seen):\n%s", diff)
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "healthz" {
			t.Errorf("probe %s = %+v, want HTTP GET on port healthz", name, probe)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "healthz" && p.ContainerPort == 8091 }) {
		t.Errorf("ports %+v lack healthz 8091", c.Ports)
	}
	if pod.ServiceAccountName != "argocd-pull-agent" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}

	got := map[string]runtime.Object{}
	for _, o := range objects {
		m, err := metaOf(o)
		if err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%T %s/%s", o, m.GetNamespace(), m.GetName())] = o
	}
	for _, key := range []string{
		"*v1.Namespace /gitops-agents",
		"*v1.ServiceAccount gitops-agents/argocd-pull-agent",
		"*v1.Deployment gitops-agents/argocd-pull-agent",
		"*v1.ClusterRole /open-cluster-management:argocd-pull:agent",
		"*v1.ClusterRoleBinding /open-cluster-management:argocd-pull:agent",
		"*v1.Role gitops-agents/argocd-pull-agent",
		"*v1.RoleBinding gitops-agents/argocd-pull-agent",
		"*v1.Role argocd/argocd-pull-agent-applications",
		"*v1.RoleBinding argocd/argocd-pull-agent-applications",
		"*v1.ClusterRole /open-cluster-management:argocd-pull:work-applications",
		"*v1.Role argocd/argocd-pull-agent-argocd-redis",
		"*v1.RoleBinding argocd/argocd-pull-agent-argocd-redis",
		"*v1.NetworkPolicy argocd/argocd-pull-agent-argocd-redis",
		"*v1.Service gitops-agents/argocd-pull-agent-metrics",
	} {
		if _, ok := got[key]; !ok {
			t.Errorf("missing %s; rendered: %v", key, sortedKeys(got))
		}
	}
	if len(got) != 14 {
		t.Errorf("rendered %d objects, want 14: %v", len(got), sortedKeys(got))
	}

	// The metrics Service selects the agent's Pod and targets the port it serves metrics
	// on, so a PodMonitor or ServiceMonitor on the cluster can scrape it (docs/metrics.md).
	svc := got["*v1.Service gitops-agents/argocd-pull-agent-metrics"].(*corev1.Service)
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("metrics Service selects %s=%s, the agent's Pod has %v", k, v, d.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" ||
		svc.Spec.Ports[0].TargetPort.String() != "metrics" ||
		!slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8090 }) ||
		!slices.Contains(c.Args, "--metrics-bind-address=:8090") {
		t.Errorf("metrics Service %+v, container ports %+v, args %v", svc.Spec, c.Ports, c.Args)
	}

	ns := got["*v1.Namespace /gitops-agents"].(*corev1.Namespace)
	if _, ok := ns.Annotations[addonv1alpha1.DeletionOrphanAnnotationKey]; !ok {
		t.Errorf("install Namespace is not orphaned on addon removal: %v", ns.Annotations)
	}

	work := got["*v1.ClusterRole /open-cluster-management:argocd-pull:work-applications"].(*rbacv1.ClusterRole)
	if work.Labels["open-cluster-management.io/aggregate-to-work"] != "true" {
		t.Errorf("work ClusterRole labels = %v, want aggregate-to-work", work.Labels)
	}
	wantWorkRules := []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
		Verbs: []string{"create", "update", "patch", "delete", "get", "list", "watch"}}}
	if diff := cmp.Diff(wantWorkRules, work.Rules); diff != "" {
		t.Errorf("work ClusterRole rules (-want +got):\n%s", diff)
	}

	reader := got["*v1.ClusterRole /open-cluster-management:argocd-pull:agent"].(*rbacv1.ClusterRole)
	wantReaderRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"applications.argoproj.io"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	}
	if diff := cmp.Diff(wantReaderRules, reader.Rules); diff != "" {
		t.Errorf("agent ClusterRole rules (-want +got):\n%s", diff)
	}

	lease := got["*v1.Role gitops-agents/argocd-pull-agent"].(*rbacv1.Role)
	if !grants(lease.Rules, "coordination.k8s.io", "leases", apps.AddonName, "update") ||
		!grants(lease.Rules, "coordination.k8s.io", "leases", "", "create") ||
		!grants(lease.Rules, "", "events", "", "create") {
		t.Errorf("install-namespace Role rules lack lease or event access: %+v", lease.Rules)
	}
	apps := got["*v1.Role argocd/argocd-pull-agent-applications"].(*rbacv1.Role)
	wantAppsRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	if diff := cmp.Diff(wantAppsRules, apps.Rules); diff != "" {
		t.Errorf("watched-namespace Role rules: read and patch Applications (the hub's requests), never update, create or delete them (-want +got):\n%s", diff)
	}
	for _, key := range []string{"*v1.RoleBinding gitops-agents/argocd-pull-agent", "*v1.RoleBinding argocd/argocd-pull-agent-applications"} {
		rb := got[key].(*rbacv1.RoleBinding)
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "argocd-pull-agent", Namespace: "gitops-agents"}}
		if diff := cmp.Diff(want, rb.Subjects); diff != "" {
			t.Errorf("%s subjects (-want +got):\n%s", key, diff)
		}
	}
}

// The agent pulls its image with the Secrets the manager names (the hub chart's
// imagePullSecrets), also when an AddOnDeploymentConfig mirrors the image; without any it
// names none. Its namespace asks the klusterlet for its pull Secret.
func TestManifestsImagePullSecrets(t *testing.T) {
	mirror := testConfig(addonv1alpha1.AddOnDeploymentConfigSpec{Registries: []addonv1alpha1.ImageMirror{{
		Source: "quay.io/open-cluster-management", Mirror: "registry.example.com/ocm"}}})
	tests := map[string]struct {
		secrets []string
		config  *addonv1alpha1.AddOnDeploymentConfig
		want    []corev1.LocalObjectReference
	}{
		"none": {},
		"two": {
			secrets: []string{"open-cluster-management-image-pull-credentials", "regcred"},
			want:    []corev1.LocalObjectReference{{Name: "open-cluster-management-image-pull-credentials"}, {Name: "regcred"}},
		},
		"with a mirroring AddOnDeploymentConfig": {
			secrets: []string{"regcred"},
			config:  mirror,
			want:    []corev1.LocalObjectReference{{Name: "regcred"}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			opts := NewOptions()
			opts.AgentImagePullSecrets = tt.secrets
			objects, err := renderWithOptions(t, opts, testCluster(nil), testAddon("", tt.config), tt.config)
			if err != nil {
				t.Fatalf("Manifests: %v", err)
			}
			pod := findDeployment(t, objects).Spec.Template.Spec
			if diff := cmp.Diff(tt.want, pod.ImagePullSecrets); diff != "" {
				t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
			}
			if tt.config != nil && !strings.HasPrefix(pod.Containers[0].Image, "registry.example.com/ocm/") {
				t.Errorf("image %s is not mirrored: the case tests nothing", pod.Containers[0].Image)
			}
			for _, o := range objects {
				if ns, ok := o.(*corev1.Namespace); ok && ns.Labels["addon.open-cluster-management.io/namespace"] != "true" {
					t.Errorf("install Namespace labels = %v, want addon.open-cluster-management.io/namespace=true", ns.Labels)
				}
			}
		})
	}
}

func grants(rules []rbacv1.PolicyRule, group, resource, name, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(name == "" && len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name))
	})
}

func sortedKeys(m map[string]runtime.Object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
