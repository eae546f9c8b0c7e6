package agent_test

import (
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// resourceTreeSpecs: with Argo CD keeping per-resource health in its resource tree, the
// agent reads the tree from a real redis-server (argoRedis) with the password of the
// argocd-redis Secret, and says on its ManagedClusterAddOn when it cannot. Trees are
// written as Argo CD's application controller writes them: its own cache client, gzip.
// They run inside the suite's Ordered container, with the suite's agent.
func resourceTreeSpecs() {
	const app = "tree-app"
	key := client.ObjectKey{Namespace: argoNamespace, Name: app}
	degraded := `Deployment "guestbook-ui" exceeded its progress deadline`
	// inTree is status as Argo CD 3 writes it: no health per resource.
	inTree := func(rev string, h health.HealthStatusCode) argov1alpha1.ApplicationStatus {
		status := syncedHealthy(rev)
		status.Health.Status = h
		status.ReconciledAt = &finished
		status.ControllerNamespace = argoNamespace
		status.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
		for i := range status.Resources {
			status.Resources[i].Health = nil
		}
		return status
	}
	// tree is the guestbook's tree with the Deployment's health and one Pod under it.
	tree := func(deployment *argov1alpha1.HealthStatus, pod *argov1alpha1.HealthStatus) *argov1alpha1.ApplicationTree {
		dep := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment",
			Namespace: "guestbook", Name: "guestbook-ui", UID: "dep-uid"}, Health: deployment}
		rs := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet",
			Namespace: "guestbook", Name: "guestbook-ui-5d4f", UID: "rs-uid"}, ParentRefs: []argov1alpha1.ResourceRef{dep.ResourceRef},
			Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}}
		return &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
			{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", UID: "svc-uid"},
				Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
			dep, rs,
			{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "guestbook-ui-5d4f-x1", UID: "pod-uid"},
				ParentRefs: []argov1alpha1.ResourceRef{rs.ResourceRef}, Health: pod},
		}}
	}
	writeTree := func(password string, t *argov1alpha1.ApplicationTree) {
		GinkgoHelper()
		writeResourceTree(password, app, t)
	}
	treeCondition := func() metav1.Condition {
		mca := managedClusterAddOn()
		if err := hub.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
			return metav1.Condition{}
		}
		if c := meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionResourceTreeReadable); c != nil {
			return *c
		}
		return metav1.Condition{}
	}
	It("reports each resource's health and the not-healthy children from the tree, with the password of Argo CD's Secret", func() {
		setRedisSecret()
		writeTree(redisPassword, tree(&argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: degraded},
			&argov1alpha1.HealthStatus{Status: health.HealthStatusProgressing, Message: "ContainerCreating"}))
		createApplication(pulledApp(argoNamespace, app).Build(), inTree("abc", health.HealthStatusDegraded))

		Eventually(func(g Gomega) {
			rep := reportOf(argoNamespace, app)()
			g.Expect(rep).NotTo(BeNil())
			g.Expect(rep.Status.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceRedisTree))
			g.Expect(rep.Status.Resources).To(ContainElement(And(HaveField("Kind", "Deployment"),
				HaveField("Health", HaveValue(And(HaveField("Status", appsv1alpha1.HealthStatusDegraded), HaveField("Message", degraded)))))))
			g.Expect(rep.Status.Resources).To(ContainElement(And(HaveField("Kind", "Service"),
				HaveField("Health", HaveValue(HaveField("Status", appsv1alpha1.HealthStatusHealthy))))))
			g.Expect(rep.Status.ResourceTree).To(HaveValue(And(
				HaveField("Children", int32(2)),
				HaveField("NotHealthy", ConsistOf(And(HaveField("Kind", "Pod"), HaveField("Parent", "Deployment/guestbook-ui"),
					HaveField("Health.Status", appsv1alpha1.HealthStatusProgressing)))))))
		}).Should(Succeed())
		Eventually(treeCondition).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", apps.ReasonResourceTreeRead),
			HaveField("Message", ContainSubstring(argoRedis.Addr))))
	})

	It("reads the tree again when the Application changes", func() {
		// Settled: the echo of the agent's own report write (a hub event) has been handled.
		name := reportKey(argoNamespace, app).Name
		Consistently(func() int { return reportWrites(name) }).Should(Equal(reportWrites(name)))
		writeTree(redisPassword, tree(&argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}, &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}))
		// A tree change alone is not an event: the report keeps the last read.
		Consistently(reportOf(argoNamespace, app)).Should(HaveField("Status.ResourceTree.NotHealthy", Not(BeEmpty())))
		// Argo CD updates the Application's status after it wrote the tree.
		Expect(setStatus(ctx, managed, key, inTree("abc", health.HealthStatusHealthy))).To(Succeed())
		Eventually(func(g Gomega) {
			rep := reportOf(argoNamespace, app)()
			g.Expect(rep).NotTo(BeNil())
			g.Expect(rep.Status.Resources).To(ContainElement(And(HaveField("Kind", "Deployment"),
				HaveField("Health", HaveValue(HaveField("Status", appsv1alpha1.HealthStatusHealthy))))))
			g.Expect(rep.Status.ResourceTree).To(HaveValue(HaveField("NotHealthy", BeEmpty())))
		}).Should(Succeed())
	})

	It("says False with Redis' error when Redis refuses the credentials, and still reports the rest", func() {
		By("changing Redis' password without telling the Secret, and dropping the agent's connections")
		rc := admin(redisPassword)
		Expect(rc.ConfigSet(ctx, "requirepass", "changed-"+redisPassword).Err()).To(Succeed())
		Expect(rc.ClientKillByFilter(ctx, "TYPE", "normal").Err()).To(Succeed())
		_ = rc.Close()
		Expect(setStatus(ctx, managed, key, inTree("def", health.HealthStatusHealthy))).To(Succeed())

		Eventually(treeCondition).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", apps.ReasonResourceTreeUnreadable),
			HaveField("Message", ContainSubstring("WRONGPASS"))))
		Eventually(func(g Gomega) {
			rep := reportOf(argoNamespace, app)()
			g.Expect(rep).NotTo(BeNil())
			g.Expect(rep.Status.Sync.Revision).To(Equal("def"))
			g.Expect(rep.Status.ResourceHealthSource).To(Equal(appsv1alpha1.ResourceHealthSourceAppTree))
			g.Expect(rep.Status.ResourceTree).To(BeNil())
			g.Expect(rep.Status.Resources).To(HaveEach(HaveField("Health", BeNil())))
		}).Should(Succeed())
		Expect(addonCondition()).To(HaveField("Status", metav1.ConditionTrue), "ApplicationsWatched, beside it")
	})

	It("reads the Secret again at the next change and reports the tree again", func() {
		redisPassword = "changed-" + redisPassword
		setRedisSecret()
		Expect(setStatus(ctx, managed, key, inTree("ghi", health.HealthStatusHealthy))).To(Succeed())
		Eventually(treeCondition).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(reportOf(argoNamespace, app)).Should(And(
			HaveField("Status.Sync.Revision", "ghi"),
			HaveField("Status.ResourceHealthSource", appsv1alpha1.ResourceHealthSourceRedisTree)))
	})

	It("stops reading for an Application deleted", func() {
		Expect(managed.Delete(ctx, pulledApp(argoNamespace, app).Build())).To(Succeed())
		Eventually(reportOf(argoNamespace, app)).Should(BeNil())
	})
}

// redisPassword is argoRedis' password as the specs change it.
var redisPassword string

func admin(password string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: argoRedis.Addr, Password: password})
}

// writeResourceTree writes t as the tree of the Application instanceName as Argo CD's
// application controller does: its own cache client, gzip.
func writeResourceTree(password, instanceName string, t *argov1alpha1.ApplicationTree) {
	GinkgoHelper()
	rc := admin(password)
	defer rc.Close()
	argo := appstate.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(rc, time.Hour, cacheutil.RedisCompressionGZip)), time.Hour)
	Expect(argo.SetAppResourcesTree(instanceName, t)).To(Succeed())
}

// setRedisSecret writes redisPassword into Argo CD's argocd-redis Secret, as Argo CD's
// installation keeps it.
func setRedisSecret() {
	GinkgoHelper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNamespace, Name: "argocd-redis"}}
	_, err := controllerutil.CreateOrUpdate(ctx, managed, secret, func() error {
		secret.Data = map[string][]byte{"auth": []byte(redisPassword)}
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
}
