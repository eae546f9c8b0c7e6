package agent_test

import (
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/resourcetree"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
)

// suiteTreeInterval is the suite agent's --resource-tree-interval: long enough that a
// spec's burst of changes falls inside it, short enough to wait for.
const suiteTreeInterval = 4 * time.Second

// treeWrites is how many writes the agent under test sent to the hub for the resource
// tree name.
func treeWrites(name string) int { return writes.Of("applicationresourcetrees", name) }

func unchangedTrees() float64 {
	return counterValue("argocd_pull_agent_resource_trees_unchanged_total")
}

// hubTreeOf returns a function that reads the hub's ApplicationResourceTree of an
// Application, nil if none.
func hubTreeOf(namespace, name string) func() *appsv1alpha1.ApplicationResourceTree {
	return func() *appsv1alpha1.ApplicationResourceTree {
		t := &appsv1alpha1.ApplicationResourceTree{}
		if err := hub.Get(ctx, reportKey(namespace, name), t); err != nil {
			return nil
		}
		return t
	}
}

// digestOf is the digest the agent gives tree.
func digestOf(tree *argov1alpha1.ApplicationTree) string {
	GinkgoHelper()
	data, err := resourcetree.Encode(tree)
	Expect(err).NotTo(HaveOccurred())
	return data.Digest
}

// applicationTreeSpecs: the agent sends each pulled Application's full resource tree, read
// from the cluster's Argo CD Redis (argoRedis, its Secret set by resourceTreeSpecs), to the
// hub as an ApplicationResourceTree next to the report. They run inside the suite's Ordered
// container, after resourceTreeSpecs, with the suite's agent (suiteTreeInterval).
func applicationTreeSpecs() {
	const app = "sent-tree"
	key := client.ObjectKey{Namespace: argoNamespace, Name: app}
	name := report.ReportName(argoNamespace, app)
	// revisions makes every status change a change: Argo CD moves reconciledAt at least.
	revision := 0
	touch := func() {
		GinkgoHelper()
		revision++
		status := syncedHealthy("abc")
		status.ControllerNamespace = argoNamespace
		status.ReconciledAt = &metav1.Time{Time: started.Add(time.Duration(revision) * time.Minute)}
		Expect(setStatus(ctx, managed, key, status)).To(Succeed())
	}
	// podsTree is a Deployment with a ReplicaSet and pods Pods, each with message msg, its
	// nodes in the order Argo CD keeps them (Normalize: its cache writes sort them).
	podsTree := func(pods int, msg string) *argov1alpha1.ApplicationTree {
		dep := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment",
			Namespace: "guestbook", Name: "guestbook-ui", UID: "dep-uid"}, Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}}
		rs := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet",
			Namespace: "guestbook", Name: "guestbook-ui-5d4f", UID: "rs-uid"}, ParentRefs: []argov1alpha1.ResourceRef{dep.ResourceRef},
			Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}}
		tree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{dep, rs}}
		for i := range pods {
			tree.Nodes = append(tree.Nodes, argov1alpha1.ResourceNode{
				ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Pod", Namespace: "guestbook",
					Name: fmt.Sprintf("guestbook-ui-5d4f-%d", i), UID: fmt.Sprintf("pod-uid-%d", i)},
				ParentRefs: []argov1alpha1.ResourceRef{rs.ResourceRef},
				Health:     &argov1alpha1.HealthStatus{Status: health.HealthStatusProgressing, Message: msg}})
		}
		tree.Normalize()
		return tree
	}
	// settled waits until the agent wrote the tree carrying digest and writes no more, and
	// returns how many writes the tree took.
	settled := func(digest string) int {
		GinkgoHelper()
		Eventually(hubTreeOf(argoNamespace, app)).Should(HaveField("Tree.Digest", digest))
		Consistently(func() int { return treeWrites(name) }).Should(Equal(treeWrites(name)))
		return treeWrites(name)
	}

	It("sends the tree Argo CD keeps in Redis to the hub, named, labelled and owned like the report", func() {
		sent := podsTree(2, "ContainerCreating")
		writeResourceTree(redisPassword, app, sent)
		createApplication(pulledApp(argoNamespace, app).Build(), syncedHealthy("abc"))
		touch()

		Eventually(func(g Gomega) {
			t, rep := hubTreeOf(argoNamespace, app)(), reportOf(argoNamespace, app)()
			g.Expect(t).NotTo(BeNil())
			g.Expect(rep).NotTo(BeNil())
			g.Expect(t.Source).To(Equal(rep.Source))
			g.Expect(t.Labels).To(Equal(rep.Labels))
			g.Expect(t.OwnerReferences).To(Equal(rep.OwnerReferences))
			g.Expect(t.Tree.Nodes).To(Equal(int32(4)))
			g.Expect(t.Tree.OmittedNodes).To(BeZero())
			g.Expect(t.Tree.ObservedAt.Time).NotTo(BeZero())
			decoded, err := resourcetree.Decode(&t.Tree)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(decoded.Nodes).To(Equal(sent.Nodes))
		}).Should(Succeed())
	})

	It("does not write the tree again when the Application changes and the tree does not", func() {
		written := settled(digestOf(podsTree(2, "ContainerCreating")))
		unchangedBefore := unchangedTrees()
		for range 3 {
			touch()
		}
		// The agent read the tree again (after the interval), and wrote nothing.
		Eventually(unchangedTrees, 2*suiteTreeInterval).Should(BeNumerically(">", unchangedBefore))
		Consistently(func() int { return treeWrites(name) }).Should(Equal(written))
	})

	It("writes a burst of changes inside the interval once, with the newest tree", func() {
		settled(digestOf(podsTree(2, "ContainerCreating")))
		first := podsTree(2, "burst 0")
		writeResourceTree(redisPassword, app, first)
		touch()
		Eventually(hubTreeOf(argoNamespace, app)).Should(HaveField("Tree.Digest", digestOf(first)))
		written := treeWrites(name)
		firstWrite := hubTreeOf(argoNamespace, app)().Tree.ObservedAt.Time

		// Inside the interval that write started: three more trees, each announced by an
		// Application change, as Argo CD does.
		var newest *argov1alpha1.ApplicationTree
		for i := 1; i <= 3; i++ {
			newest = podsTree(2, fmt.Sprintf("burst %d", i))
			writeResourceTree(redisPassword, app, newest)
			touch()
			time.Sleep(300 * time.Millisecond)
		}
		Eventually(hubTreeOf(argoNamespace, app), 3*suiteTreeInterval).Should(HaveField("Tree.Digest", digestOf(newest)))
		Consistently(func() int { return treeWrites(name) }).Should(Equal(written + 1))
		// Not before the interval was over (ObservedAt is cut to the second).
		Expect(hubTreeOf(argoNamespace, app)().Tree.ObservedAt.Time).To(BeTemporally(">=", firstWrite.Add(suiteTreeInterval-time.Second)))
	})

	It("sends an oversize tree capped, saying how many nodes it left out", func() {
		big := podsTree(appsv1alpha1.MaxTreeNodes+98, "crowded") // 2 + 2,098 nodes: 100 too many
		writeResourceTree(redisPassword, app, big)
		touch()
		Eventually(hubTreeOf(argoNamespace, app), 3*suiteTreeInterval).Should(And(
			HaveField("Tree.Nodes", int32(appsv1alpha1.MaxTreeNodes)),
			HaveField("Tree.OmittedNodes", int32(100))))
		decoded, err := resourcetree.Decode(&hubTreeOf(argoNamespace, app)().Tree)
		Expect(err).NotTo(HaveOccurred())
		Expect(decoded.Nodes).To(HaveLen(appsv1alpha1.MaxTreeNodes))
		kinds := map[string]int{}
		for _, n := range decoded.Nodes {
			kinds[n.Kind]++
		}
		Expect(kinds).To(Equal(map[string]int{"Deployment": 1, "ReplicaSet": 1, "Pod": appsv1alpha1.MaxTreeNodes - 2}),
			"the Deployment and its ReplicaSet are kept, Pods go")
	})

	It("deletes the trees it wrote when switched off, and sends them again when switched on", func() {
		Expect(hubTreeOf(argoNamespace, app)()).NotTo(BeNil())
		Expect(theAgent.stop()).To(Succeed())
		theAgent = startAgent(func(o *agent.Options) {
			agentAgainstProxy(o)
			o.ResourceTrees = false
		})
		Eventually(hubTreeOf(argoNamespace, app)).Should(BeNil())
		Expect(reportOf(argoNamespace, app)()).NotTo(BeNil(), "the report stays")

		Expect(theAgent.stop()).To(Succeed())
		theAgent = startAgent(agentAgainstProxy)
		touch()
		Eventually(hubTreeOf(argoNamespace, app), 3*suiteTreeInterval).ShouldNot(BeNil())
	})

	It("deletes the tree with the report when the Application is deleted", func() {
		Expect(managed.Delete(ctx, pulledApp(argoNamespace, app).Build())).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, reportKey(argoNamespace, app), &appsv1alpha1.ApplicationResourceTree{}))
		}).Should(BeTrue())
		Eventually(reportOf(argoNamespace, app)).Should(BeNil())
	})
}
