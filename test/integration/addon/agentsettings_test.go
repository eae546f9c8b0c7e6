package addon_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
)

var _ = Describe("The agent settings of an AddOnDeploymentConfig", func() {
	It("reach the rendered agent's flags; an invalid one is reported on the ManagedClusterAddOn until fixed", func(ctx SpecContext) {
		cluster := unique("settings")
		createCluster(ctx, cluster)
		config := &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "argocd-pull"},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{
				{Name: addon.VariableArgoCDNamespace, Value: "gitops"},
				{Name: addon.VariableRedisSecret, Value: "gitops-redis"},
				{Name: addon.VariableRedisCompression, Value: "none"},
				{Name: addon.VariableKubeAPIQPS, Value: "100"},
				{Name: addon.VariableKubeAPIBurst, Value: "150"},
				{Name: addon.VariableHubKubeAPIQPS, Value: "5"},
				{Name: addon.VariableHubKubeAPIBurst, Value: "10"},
				{Name: addon.VariableHubReconnectJitter, Value: "45s"},
				{Name: addon.VariableResourceTrees, Value: "false"},
				{Name: addon.VariableResourceTreeInterval, Value: "30s"},
			}},
		}
		Expect(k8s.Create(ctx, config)).To(Succeed())
		enableAddon(ctx, cluster, "", configRef(cluster, config.Name))

		settings := []string{"--argocd-namespace=gitops", "--redis-secret=gitops-redis", "--redis-compression=none",
			"--kube-api-qps=100", "--kube-api-burst=150", "--hub-kube-api-qps=5", "--hub-kube-api-burst=10", "--hub-reconnect-jitter=45s",
			"--resource-trees=false", "--resource-tree-interval=30s"}
		Eventually(func(g Gomega) {
			objects := agentManifests(g, ctx, cluster)
			g.Expect(agentDeployment(g, objects, defaultNamespace).Spec.Template.Spec.Containers[0].Args).To(ContainElements(settings))
			g.Expect(objects).To(HaveKey("Role gitops/argocd-pull-agent-argocd-redis"))
			role := objects["Role gitops/argocd-pull-agent-argocd-redis"].(*rbacv1.Role)
			g.Expect(role.Rules).To(ConsistOf(HaveField("ResourceNames", []string{"gitops-redis"})),
				"the agent may read the Secret it is told to")
		}, timeout, interval).Should(Succeed())

		By("setting an invalid hub QPS")
		Eventually(func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(config), config); err != nil {
				return err
			}
			config.Spec.CustomizedVariables[5].Value = "fast"
			return k8s.Update(ctx, config)
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
			applied := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied)
			g.Expect(applied).NotTo(BeNil())
			g.Expect(applied.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(applied.Message).To(ContainSubstring(`AddOnDeploymentConfig %s/argocd-pull: customizedVariable hubKubeAPIQPS "fast"`, cluster))
		}, timeout, interval).Should(Succeed())
		// The agent keeps what it was rendered with before.
		Consistently(func(g Gomega) {
			args := agentDeployment(g, agentManifests(g, ctx, cluster), defaultNamespace).Spec.Template.Spec.Containers[0].Args
			g.Expect(args).To(ContainElements(settings))
		}, "3s", interval).Should(Succeed())

		By("fixing the hub QPS")
		Eventually(func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(config), config); err != nil {
				return err
			}
			config.Spec.CustomizedVariables[5].Value = "7"
			return k8s.Update(ctx, config)
		}, timeout, interval).Should(Succeed())
		// The agent is rendered again with the fixed value, and the error leaves the addon.
		Eventually(func(g Gomega) {
			args := agentDeployment(g, agentManifests(g, ctx, cluster), defaultNamespace).Spec.Template.Spec.Containers[0].Args
			g.Expect(args).To(ContainElement("--hub-kube-api-qps=7"))
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
			// Without a work agent in this suite the condition goes rather than turning True.
			if applied := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied); applied != nil {
				g.Expect(applied.Message).NotTo(ContainSubstring("customizedVariable"))
			}
		}, timeout, interval).Should(Succeed())
	})
})
