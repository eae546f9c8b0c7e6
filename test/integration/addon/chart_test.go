package addon_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	releaseName      = "argocd-pull-integration"
	releaseNamespace = "argocd"
	// managerUser is the manager's ServiceAccount as the chart's defaults name it.
	managerUser = "system:serviceaccount:" + releaseNamespace + ":" + releaseName + "-manager"
	// agentReportPolicyName names the chart's ValidatingAdmissionPolicy on the agents'
	// reports and its binding.
	agentReportPolicyName = releaseName + "-agent-reports"
)

// renderAddonTemplates renders charts/argocd-pull-integration as
// `helm install argocd-pull-integration -n argocd --set-json addon=<addonValues>` would and
// keeps the objects of its addon templates (addon-*.yaml), so these tests do not depend on
// the manager's templates.
func renderAddonTemplates(addonValues map[string]any) ([]*unstructured.Unstructured, error) {
	overrides := map[string]any{}
	if addonValues != nil {
		overrides["addon"] = addonValues
	}
	rendered, err := framework.RenderChart(releaseNamespace, overrides)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, obj := range rendered {
		switch {
		case obj.GetKind() == "ClusterManagementAddOn", obj.GetKind() == "AddOnDeploymentConfig",
			strings.HasSuffix(obj.GetName(), "-manager-addon"),
			// What the agents' RoleBindings grant, and the addon manager binds.
			obj.GetKind() == "ClusterRole" && obj.GetName() == addon.AgentHubRoleName:
			objects = append(objects, obj)
		}
	}
	return objects, nil
}

// renderAgentReportPolicy renders the chart as renderAddonTemplates does and keeps its
// admission policy on the agents' ApplicationStatusReports and the policy's binding.
func renderAgentReportPolicy() ([]*unstructured.Unstructured, error) {
	rendered, err := framework.RenderChart(releaseNamespace, nil)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, obj := range rendered {
		if obj.GetName() == agentReportPolicyName {
			objects = append(objects, obj)
		}
	}
	if len(objects) != 2 {
		return nil, fmt.Errorf("the chart renders %d objects named %s, want the policy and its binding", len(objects), agentReportPolicyName)
	}
	return objects, nil
}

var _ = Describe("The chart's addon templates", func() {
	It("offer a Placements install strategy and a default AddOnDeploymentConfig the API server accepts", func(ctx SpecContext) {
		objects, err := renderAddonTemplates(map[string]any{
			"installStrategy": map[string]any{
				"type": "Placements",
				"placements": []any{map[string]any{
					"name": "all-clusters", "namespace": releaseNamespace,
					"rolloutStrategy": map[string]any{"type": "All"},
				}},
			},
			"defaultConfig": map[string]any{
				"create": true,
				"spec": map[string]any{"customizedVariables": []any{
					map[string]any{"name": addon.VariableWatchNamespaces, "value": "argocd,openshift-gitops"}}},
			},
		})
		Expect(err).NotTo(HaveOccurred())

		var cma *addonv1alpha1.ClusterManagementAddOn
		var config *addonv1alpha1.AddOnDeploymentConfig
		for _, obj := range objects {
			switch obj.GetKind() {
			case "ClusterManagementAddOn":
				cma = &addonv1alpha1.ClusterManagementAddOn{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cma)).To(Succeed())
			case "AddOnDeploymentConfig":
				config = &addonv1alpha1.AddOnDeploymentConfig{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, config)).To(Succeed())
			}
		}
		Expect(cma).NotTo(BeNil())
		Expect(config).NotTo(BeNil())
		Expect(cma.Name).To(Equal(apps.AddonName))
		Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1alpha1.AddonInstallStrategyPlacements))
		Expect(cma.Spec.InstallStrategy.Placements).To(ConsistOf(HaveField("PlacementRef",
			addonv1alpha1.PlacementRef{Namespace: releaseNamespace, Name: "all-clusters"})))
		Expect(cma.Spec.SupportedConfigs).To(ConsistOf(addonv1alpha1.ConfigMeta{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			DefaultConfig:       &addonv1alpha1.ConfigReferent{Namespace: releaseNamespace, Name: config.Name},
		}))
		Expect(config.Namespace).To(Equal(releaseNamespace))
		Expect(config.Spec.CustomizedVariables).To(ConsistOf(addonv1alpha1.CustomizedVariable{
			Name: addon.VariableWatchNamespaces, Value: "argocd,openshift-gitops"}))

		// The API server validates them against OCM's CRDs; the suite's own ClusterManagementAddOn
		// holds the name, so this one is checked under another.
		cma.Name = "argocd-pull-placements-check"
		Expect(k8s.Create(ctx, cma, client.DryRunAll)).To(Succeed())
		Expect(k8s.Create(ctx, config, client.DryRunAll)).To(Succeed())
	})

	It("install the addon manually by default, with no default configuration", func() {
		objects, err := renderAddonTemplates(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(objects).To(HaveLen(4), "ClusterManagementAddOn, the manager's ClusterRole and ClusterRoleBinding, the agents' ClusterRole")
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objects[0].Object, cma)).To(Succeed())
		Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1alpha1.AddonInstallStrategyManual))
		Expect(cma.Spec.SupportedConfigs).To(ConsistOf(HaveField("DefaultConfig", BeNil())))
	})

	It("refuse a Placements install strategy without Placements", func() {
		_, err := renderAddonTemplates(map[string]any{"installStrategy": map[string]any{"type": "Placements"}})
		Expect(err).To(MatchError(ContainSubstring("must list at least one Placement")))
	})
})
