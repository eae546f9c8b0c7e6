package addon_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/addon"
)

const (
	// timeout is long because what the specs wait for passes through OCM's own
	// addon-manager, whose controllers all write the same new ManagedClusterAddOn and retry
	// each 409 with a per-key exponential backoff (5 ms, ..., 20 s, 41 s) until a sync
	// succeeds: its owner reference, which addon-framework's registration (the agent's
	// RoleBinding) waits for, and its Configured condition, which the rendering waits for,
	// set by the configuration controller under one key for all clusters. On a loaded
	// machine a new addon waited past 30 s (in CI for the rendering, here once in 12 loaded
	// runs for the RoleBinding).
	timeout  = 2 * time.Minute
	interval = 200 * time.Millisecond

	testAgentImage = "quay.io/open-cluster-management/argocd-pull-addon:v0.1.0"
	// testPullSecret is the manager's --agent-image-pull-secrets (the hub chart's
	// imagePullSecrets): the klusterlet's pull Secret, which it copies into addon namespaces.
	testPullSecret   = "open-cluster-management-image-pull-credentials"
	defaultNamespace = "open-cluster-management-agent-addon"
	// reportQuota is the addon manager's --agent-report-quota here: a cluster's second
	// report is past it.
	reportQuota = 1
)

var seq atomic.Int32

// unique returns prefix with a suffix no other spec uses: specs share one API server.
// Cluster names end in a letter so that no cluster name is a prefix of another.
func unique(prefix string) string { return fmt.Sprintf("%s-%d-c", prefix, seq.Add(1)) }

// --- fixtures ---

func createCluster(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	Expect(k8s.Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	})).To(Succeed())
}

// enableAddon does what `clusteradm addon enable --names argocd-pull --clusters cluster
// [--namespace installNamespace]` does, optionally with AddOnDeploymentConfigs.
func enableAddon(ctx context.Context, cluster, installNamespace string, configs ...addonv1alpha1.AddOnConfig) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: apps.AddonName, Namespace: cluster},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNamespace, Configs: configs},
	})).To(Succeed())
}

func configRef(namespace, name string) addonv1alpha1.AddOnConfig {
	return addonv1alpha1.AddOnConfig{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: namespace, Name: name},
	}
}

// agentManifests decodes the manifests of the cluster's addon ManifestWorks, keyed
// "Kind namespace/name".
func agentManifests(g Gomega, ctx context.Context, cluster string) map[string]client.Object {
	works := &workv1.ManifestWorkList{}
	g.Expect(k8s.List(ctx, works, client.InNamespace(cluster),
		client.MatchingLabels{addonv1alpha1.AddonLabelKey: apps.AddonName})).To(Succeed())
	g.Expect(works.Items).NotTo(BeEmpty(), "no addon ManifestWork in %s yet", cluster)
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	objects := map[string]client.Object{}
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			o, gvk, err := decoder.Decode(m.Raw, nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			obj := o.(client.Object)
			objects[fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())] = obj
		}
	}
	return objects
}

func agentDeployment(g Gomega, objects map[string]client.Object, namespace string) *appsv1.Deployment {
	key := "Deployment " + namespace + "/argocd-pull-agent"
	g.Expect(objects).To(HaveKey(key))
	return objects[key].(*appsv1.Deployment)
}

// redis, when given, are the --argocd-namespace and --redis-address the agent gets;
// without, the defaults (argocd, Argo CD's Service).
func agentArgs(cluster, namespace, watch, level string, redis ...string) []string {
	argo := []string{"--argocd-namespace=argocd"}
	if len(redis) == 2 {
		argo = []string{"--argocd-namespace=" + redis[0], "--redis-address=" + redis[1]}
	}
	return append(append([]string{
		"agent",
		"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig",
		"--cluster-name=" + cluster,
		"--addon-namespace=" + namespace,
		"--watch-namespaces=" + watch,
	}, argo...),
		"--health-probe-bind-address=:8091",
		"--metrics-bind-address=:8090",
		"--v="+level,
	)
}

// agentClient is a client authenticated as cluster's addon agent, as its registration
// certificate would authenticate it.
func agentClient(cluster string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(apiServer.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: agent.DefaultUser(cluster, apps.AddonName, addon.AgentName),
		Groups:   agent.DefaultGroups(cluster, apps.AddonName),
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// newReport is the report of Application argocd/name on cluster, shaped as the agent
// writes it (the chart's admission policy refuses other shapes from agents).
func newReport(cluster, name string) *appsv1alpha1.ApplicationStatusReport {
	return &appsv1alpha1.ApplicationStatusReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: report.ReportName("argocd", name)},
		Source: appsv1alpha1.ApplicationReportSource{
			Cluster: cluster, Namespace: "argocd", Name: name,
			HubApplicationNamespace: "argocd", HubApplicationName: name,
		},
		Status: appsv1alpha1.ApplicationReportStatus{
			ObservedAt: metav1.Now(),
			Sync:       appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusSynced},
			Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusHealthy},
		},
	}
}

func waitForHubRoleBinding(ctx context.Context, cluster string) *rbacv1.RoleBinding {
	GinkgoHelper()
	binding := &rbacv1.RoleBinding{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addon.AgentHubRoleName}, binding)
	}, timeout, interval).Should(Succeed())
	return binding
}

var _ = Describe("The argocd-pull addon manager", func() {
	It("renders the agent, its RBAC and the work agent's Application permission into the cluster's ManifestWork", func(ctx SpecContext) {
		cluster := unique("render")
		createCluster(ctx, cluster)
		enableAddon(ctx, cluster, "")

		Eventually(func(g Gomega) {
			objects := agentManifests(g, ctx, cluster)
			d := agentDeployment(g, objects, defaultNamespace)
			pod := d.Spec.Template.Spec
			g.Expect(pod.Containers).To(HaveLen(1))
			c := pod.Containers[0]
			g.Expect(c.Image).To(Equal(testAgentImage))
			g.Expect(c.Args).To(Equal(agentArgs(cluster, defaultNamespace, "argocd", "2")))
			g.Expect(pod.ServiceAccountName).To(Equal("argocd-pull-agent"))
			g.Expect(pod.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: testPullSecret}}))
			// The label that has the klusterlet copy its pull Secret into the namespace.
			g.Expect(objects).To(HaveKey("Namespace /" + defaultNamespace))
			g.Expect(objects["Namespace /"+defaultNamespace].GetLabels()).To(
				HaveKeyWithValue("addon.open-cluster-management.io/namespace", "true"))
			// The registration Secret, mounted as a directory so rotated certificates are seen.
			g.Expect(pod.Volumes).To(ConsistOf(corev1.Volume{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "argocd-pull-hub-kubeconfig"}}}))
			g.Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{
				Name: "hub-kubeconfig", MountPath: "/managed/hub-kubeconfig", ReadOnly: true}))
			g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
			g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))

			g.Expect(objects).To(HaveKey("ServiceAccount " + defaultNamespace + "/argocd-pull-agent"))
			g.Expect(objects).To(HaveKey("ClusterRole /open-cluster-management:argocd-pull:agent"))
			g.Expect(objects).To(HaveKey("Role argocd/argocd-pull-agent-applications"))
			g.Expect(objects).To(HaveKey("Role " + defaultNamespace + "/argocd-pull-agent"))
			// Reading Argo CD's resource trees: its Redis password, and a way to Redis' port.
			g.Expect(objects).To(HaveKey("Role argocd/argocd-pull-agent-argocd-redis"))
			g.Expect(objects).To(HaveKey("RoleBinding argocd/argocd-pull-agent-argocd-redis"))
			g.Expect(objects).To(HaveKey("NetworkPolicy argocd/argocd-pull-agent-argocd-redis"))

			work := objects["ClusterRole /open-cluster-management:argocd-pull:work-applications"]
			g.Expect(work).NotTo(BeNil())
			g.Expect(work.GetLabels()).To(HaveKeyWithValue("open-cluster-management.io/aggregate-to-work", "true"))
			g.Expect(work.(*rbacv1.ClusterRole).Rules).To(ConsistOf(rbacv1.PolicyRule{
				APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"},
				Verbs: []string{"create", "update", "patch", "delete", "get", "list", "watch"}}))
		}, timeout, interval).Should(Succeed())

		// What the klusterlet's registration agent requests a certificate for, and where it
		// puts the hub kubeconfig Secret.
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
			g.Expect(mca.Status.Namespace).To(Equal(defaultNamespace))
			g.Expect(mca.Status.Registrations).To(ConsistOf(addonv1alpha1.RegistrationConfig{
				SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Subject: addonv1alpha1.Subject{
					User:   agent.DefaultUser(cluster, apps.AddonName, addon.AgentName),
					Groups: agent.DefaultGroups(cluster, apps.AddonName),
				},
			}))
			g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})

	It("keeps a cluster's rendered agent while the addon is enabled and forgets it when the addon is disabled", func(ctx SpecContext) {
		cluster := unique("forget")
		createCluster(ctx, cluster)
		enableAddon(ctx, cluster, "")
		Eventually(func(g Gomega) {
			agentDeployment(g, agentManifests(g, ctx, cluster), defaultNamespace)
		}, timeout, interval).Should(Succeed())
		Expect(renders.Cached(cluster)).To(BeTrue(), "the rendering the ManifestWork came from is kept")

		By("disabling the addon, as `clusteradm addon disable` does")
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: apps.AddonName}}
		Expect(k8s.Delete(ctx, mca)).To(Succeed())
		Eventually(func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(mca), mca)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManagedClusterAddOn still there: %v", err)
		}, timeout, interval).Should(Succeed())
		Eventually(func() bool { return renders.Cached(cluster) }, timeout, interval).Should(BeFalse())
	})

	It("installs into the addon's namespace and follows its AddOnDeploymentConfig", func(ctx SpecContext) {
		cluster := unique("config")
		createCluster(ctx, cluster)
		config := &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "argocd-pull"},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{
				// agentInstallNamespace is left to the CRD default, which must not win over
				// the addon's own namespace.
				Registries: []addonv1alpha1.ImageMirror{{Source: "quay.io/open-cluster-management", Mirror: "mirror.example.com/ocm"}},
				NodePlacement: &addonv1alpha1.NodePlacement{
					NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				},
				ProxyConfig: addonv1alpha1.ProxyConfig{HTTPSProxy: "http://proxy.example.com:3128", NoProxy: ".cluster.local"},
				CustomizedVariables: []addonv1alpha1.CustomizedVariable{
					{Name: addon.VariableWatchNamespaces, Value: "argocd,gitops"},
					{Name: addon.VariableLogLevel, Value: "4"},
					{Name: addon.VariableArgoCDNamespace, Value: "gitops"},
					{Name: addon.VariableRedisAddress, Value: "redis.gitops.svc:6380"},
				},
			},
		}
		Expect(k8s.Create(ctx, config)).To(Succeed())
		Expect(config.Spec.AgentInstallNamespace).To(Equal(defaultNamespace), "the CRD defaults it")
		enableAddon(ctx, cluster, "gitops-agents", configRef(cluster, config.Name))

		Eventually(func(g Gomega) {
			objects := agentManifests(g, ctx, cluster)
			d := agentDeployment(g, objects, "gitops-agents")
			pod := d.Spec.Template.Spec
			c := pod.Containers[0]
			g.Expect(c.Image).To(Equal("mirror.example.com/ocm/argocd-pull-addon:v0.1.0"))
			g.Expect(pod.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: testPullSecret}}),
				"the mirrored image is pulled with the same Secrets")
			g.Expect(c.Args).To(Equal(agentArgs(cluster, "gitops-agents", "argocd,gitops", "4", "gitops", "redis.gitops.svc:6380")))
			g.Expect(pod.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux"}))
			g.Expect(pod.Tolerations).To(ConsistOf(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}))
			g.Expect(c.Env).To(ConsistOf(
				corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy.example.com:3128"},
				corev1.EnvVar{Name: "NO_PROXY", Value: ".cluster.local"},
			))
			g.Expect(objects).To(HaveKey("Namespace /gitops-agents"))
			g.Expect(objects).To(HaveKey("Role gitops/argocd-pull-agent-applications"))
			g.Expect(objects).To(HaveKey("Role gitops-agents/argocd-pull-agent"))
			g.Expect(objects).To(HaveKey("NetworkPolicy gitops/argocd-pull-agent-argocd-redis"))
		}, timeout, interval).Should(Succeed())

		// The klusterlet puts the hub kubeconfig Secret and watches the Lease where
		// status.namespace says: it must agree with the rendered namespace.
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
			g.Expect(mca.Status.Namespace).To(Equal("gitops-agents"))
		}, timeout, interval).Should(Succeed())

		By("changing the AddOnDeploymentConfig")
		Eventually(func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(config), config); err != nil {
				return err
			}
			config.Spec.CustomizedVariables = []addonv1alpha1.CustomizedVariable{{Name: addon.VariableLogLevel, Value: "6"}}
			config.Spec.AgentInstallNamespace = "platform-agents"
			return k8s.Update(ctx, config)
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) {
			d := agentDeployment(g, agentManifests(g, ctx, cluster), "platform-agents")
			g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(Equal(agentArgs(cluster, "platform-agents", "argocd", "6")))
		}, timeout, interval).Should(Succeed())
	})

	It("grants each agent the chart's hub ClusterRole in its cluster namespace only, bound to that cluster's group only", func(ctx SpecContext) {
		cluster := unique("rbac")
		createCluster(ctx, cluster)
		enableAddon(ctx, cluster, "")

		binding := waitForHubRoleBinding(ctx, cluster)
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: addon.AgentHubRoleName}))
		Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind,
			Name: "system:open-cluster-management:cluster:" + cluster + ":addon:argocd-pull"}))

		By("writing no Role: the rules are the chart's ClusterRole's (test/integration/chart compares them with the addon's)")
		var roles rbacv1.RoleList
		Expect(k8s.List(ctx, &roles, client.InNamespace(cluster))).To(Succeed())
		Expect(roles.Items).To(BeEmpty())

		By("binding the chart's ClusterRole, which grants exactly what the agent uses")
		role := &rbacv1.ClusterRole{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: addon.AgentHubRoleName}, role)).To(Succeed())
		// pkg/hub/addon's unit test holds AgentHubRules to a literal list, rule for rule.
		Expect(role.Rules).To(Equal(addon.AgentHubRules()))

		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster, Name: apps.AddonName}, mca)).To(Succeed())
		Expect(binding.GetOwnerReferences()).To(ContainElement(HaveField("UID", mca.UID)),
			"the RoleBinding goes with the ManagedClusterAddOn")
	})

	It("lets cluster A's agent write A's reports and nothing of cluster B's", func(ctx SpecContext) {
		a, b := unique("tenant-a"), unique("tenant-b")
		for _, cluster := range []string{a, b} {
			createCluster(ctx, cluster)
			enableAddon(ctx, cluster, "")
			waitForHubRoleBinding(ctx, cluster)
		}
		agentA := agentClient(a)

		// RBAC caches in the API server follow the new bindings within moments.
		Eventually(func() error { return agentA.Create(ctx, newReport(a, "guestbook")) }, timeout, interval).Should(Succeed())
		// The agent writes with server-side apply (a patch); it reads through its cache (list, watch).
		reports := &appsv1alpha1.ApplicationStatusReportList{}
		Expect(agentA.List(ctx, reports, client.InNamespace(a))).To(Succeed())
		Expect(reports.Items).To(HaveLen(1))
		report := &reports.Items[0]
		before := report.DeepCopy()
		report.Status.Health.Status = appsv1alpha1.HealthStatusDegraded
		Expect(agentA.Patch(ctx, report, client.MergeFrom(before))).To(Succeed())

		err := agentA.Create(ctx, newReport(b, "guestbook"))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating in B's namespace: %v", err)
		Expect(k8s.Create(ctx, newReport(b, "guestbook"))).To(Succeed())
		err = agentA.List(ctx, &appsv1alpha1.ApplicationStatusReportList{}, client.InNamespace(b))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing B's reports: %v", err)
		err = agentA.Delete(ctx, newReport(b, "guestbook"))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting B's report: %v", err)

		// Its own ManagedClusterAddOn (where it writes a condition), not B's, and no other addon's.
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(agentA.Get(ctx, client.ObjectKey{Namespace: a, Name: apps.AddonName}, mca)).To(Succeed())
		err = agentA.Get(ctx, client.ObjectKey{Namespace: b, Name: apps.AddonName}, mca)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading B's ManagedClusterAddOn: %v", err)
		err = agentA.List(ctx, &addonv1alpha1.ManagedClusterAddOnList{}, client.InNamespace(a))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing A's ManagedClusterAddOns: %v", err)
	})

	It("approves a well-formed CSR from the cluster's klusterlet and not one requested by another cluster", func(ctx SpecContext) {
		cluster, other := unique("csr-x"), unique("csr-y")
		for _, c := range []string{cluster, other} {
			createCluster(ctx, c)
			enableAddon(ctx, c, "")
		}
		// The CSR the klusterlet's registration agent files for the addon agent of cluster,
		// requested as a user of the klusterlet of requester.
		request := addonCSRRequest(cluster)
		forged := createCSR(ctx, cluster, other, request)
		genuine := createCSR(ctx, cluster, cluster, request)

		expectOnlyGenuineApproved(ctx, genuine, forged)
	})
})

// addonCSRRequest is the PEM certificate request of cluster's argocd-pull agent: the
// subject the ManagedClusterAddOn's status.registrations names.
func addonCSRRequest(cluster string) []byte {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName:   agent.DefaultUser(cluster, apps.AddonName, addon.AgentName),
		Organization: agent.DefaultGroups(cluster, apps.AddonName),
	}}, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// expectOnlyGenuineApproved waits for genuine to be approved and checks forged, filed
// before it, stays unapproved.
func expectOnlyGenuineApproved(ctx context.Context, genuine, forged *certificatesv1.CertificateSigningRequest) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(genuine), genuine)).To(Succeed())
		g.Expect(genuine.Status.Conditions).To(ContainElement(And(
			HaveField("Type", certificatesv1.CertificateApproved), HaveField("Status", corev1.ConditionTrue))))
	}, timeout, interval).Should(Succeed())
	Consistently(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(forged), forged)).To(Succeed())
		g.Expect(forged.Status.Conditions).To(BeEmpty())
	}, 2*time.Second, interval).Should(Succeed())
}

// createCSR files request for cluster's addon agent as the klusterlet of requester would.
func createCSR(ctx context.Context, cluster, requester string, request []byte) *certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	user := "system:open-cluster-management:" + requester + ":klusterlet"
	// The klusterlet's hub identity may file CSRs; this test grants it just that.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-csr-requester-" + requester},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"},
			Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}},
	}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, role))).To(Succeed())
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))).To(Succeed())

	cfg := rest.CopyConfig(apiServer.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	klusterlet, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "addon-" + cluster + "-argocd-pull-",
			Labels: map[string]string{
				addonv1alpha1.AddonLabelKey:   apps.AddonName,
				clusterv1.ClusterNameLabelKey: cluster,
			},
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    request,
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	Eventually(func() error { return klusterlet.Create(ctx, csr) }, timeout, interval).Should(Succeed())
	Expect(csr.Spec.Username).To(Equal(user))
	Expect(slices.Contains(csr.Spec.Groups, "system:authenticated")).To(BeTrue())
	return csr
}
