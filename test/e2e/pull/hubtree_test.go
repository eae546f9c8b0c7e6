//go:build e2e

package pull_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
)

// hubResourceTreeSpecs are scenario 19's specs of the hub's Argo CD UI and CLI: the hub's
// argocd-server (the fleet's, Argo CD v3) answers the resource tree of the pulled
// Application app on treeCluster from what the agent reported, and keeps answering it,
// marked stale, while the agent is away. They run once the Deployment is Degraded and has
// its ReplicaSet.
func hubResourceTreeSpecs(app string) {
	It("serves the pulled Application's resource tree from the hub's argocd-server, the Degraded Deployment and its ReplicaSet in it", func(ctx SpecContext) {
		// The agent's tree reaches the hub first: asked before the manager wrote it into
		// Redis, argocd-server would take the miss for a cache to refresh and wait.
		Eventually(func(g Gomega) {
			tree := &appsv1alpha1.ApplicationResourceTree{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: treeCluster, Name: report.ReportName(argoNS, app)}, tree)).To(Succeed())
			g.Expect(tree.Tree.Nodes).To(BeNumerically(">=", 3), toYAML(tree.Tree))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			tree, err := pf.HubServer.ResourceTree(ctx, argoNS, app)
			g.Expect(err).NotTo(HaveOccurred())
			expectDegradedTree(g, tree)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("keeps serving the last tree, the hub Application marked stale, while the cluster's agent is stopped, and drops the mark when it is back", func(ctx SpecContext) {
		stopped := false
		DeferCleanup(func(ctx SpecContext) {
			if stopped {
				Expect(pull.StartAgent(ctx, treeCluster, "")).To(Succeed())
			}
		}, NodeTimeout(3*time.Minute))

		By("stopping the agent of " + treeCluster)
		Expect(pull.StopAgent(treeCluster)).To(Succeed())
		stopped = true
		// The addon turns unavailable once its lease is older than the window
		// (5 x leaseDurationSeconds), at the registration agent's next look.
		Eventually(func(g Gomega) {
			conditions := hubConditions(getApp(ctx, g, hub, argoNS, app))
			g.Expect(conditions).To(ContainElement(And(
				HaveKeyWithValue("type", string(pullmodel.ConditionStaleStatus)),
				HaveKeyWithValue("message", And(
					ContainSubstring("cluster "+treeCluster+"'s argocd-pull agent is unavailable since"),
					ContainSubstring("resource tree shown are from its last report"))),
			)), toYAML(conditions))
		}).WithContext(ctx).WithTimeout(5*leaseDurationSeconds*time.Second + 2*time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("asking the hub's argocd-server for the tree while the agent is away")
		tree, err := pf.HubServer.ResourceTree(ctx, argoNS, app)
		Expect(err).NotTo(HaveOccurred())
		expectDegradedTree(Default, tree)

		By("starting the agent again")
		Expect(pull.StartAgent(ctx, treeCluster, "")).To(Succeed())
		stopped = false
		Eventually(func(g Gomega) {
			conditions := hubConditions(getApp(ctx, g, hub, argoNS, app))
			g.Expect(conditions).NotTo(ContainElement(HaveKeyWithValue("type", string(pullmodel.ConditionStaleStatus))), toYAML(conditions))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		tree, err = pf.HubServer.ResourceTree(ctx, argoNS, app)
		Expect(err).NotTo(HaveOccurred())
		expectDegradedTree(Default, tree)
	})
}

// expectDegradedTree expects scenario 19's tree as Argo CD computes it on the cluster:
// the Deployment Degraded past its progress deadline, its ReplicaSet (the Deployment its
// parent) Progressing, and the ConfigMap of the second source.
func expectDegradedTree(g Gomega, tree *argov1alpha1.ApplicationTree) {
	GinkgoHelper()
	dump := toYAML(tree)
	g.Expect(tree.Nodes).To(ContainElement(And(
		treeNode("apps", "Deployment", treeDeployment),
		HaveField("Health", HaveValue(And(
			HaveField("Status", BeEquivalentTo("Degraded")),
			HaveField("Message", ContainSubstring("exceeded its progress deadline")),
		))),
	)), dump)
	g.Expect(tree.Nodes).To(ContainElement(And(
		treeNode("apps", "ReplicaSet", treeReplicaSet),
		HaveField("ParentRefs", ContainElement(And(
			HaveField("Group", "apps"), HaveField("Kind", "Deployment"), HaveField("Name", treeDeployment)))),
		HaveField("Health", HaveValue(HaveField("Status", BeEquivalentTo("Progressing")))),
	)), dump)
	g.Expect(tree.Nodes).To(ContainElement(HaveField("Kind", "ConfigMap")), dump)
}

// treeNode matches the node of the resource group/kind/name in treeNS.
func treeNode(group, kind, name string) gomegatypes.GomegaMatcher {
	return And(HaveField("Group", group), HaveField("Kind", kind), HaveField("Name", name), HaveField("Namespace", treeNS))
}
