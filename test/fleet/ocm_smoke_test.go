package fleet

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The fleet's OCM smoke test: real registration, work, placement and addon-manager join
// and serve two clusters, each its own API server.
var _ = Describe("An OCM fleet of a hub and two managed clusters", Label("ocm"), Ordered, func() {
	var fleet *Fleet

	BeforeAll(func(ctx SpecContext) {
		var err error
		fleet, err = StartFleet(ctx, FleetOptions{Clusters: 2})
		DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
		Expect(err).NotTo(HaveOccurred())
		phases := ""
		for _, p := range fleet.StartPhases {
			phases += fmt.Sprintf(" %s %s;", p.Name, p.Duration.Round(100*time.Millisecond))
		}
		AddReportEntry("fleet start", fmt.Sprintf("hub + %d clusters up in %s:%s",
			len(fleet.Clusters), fleet.StartDuration.Round(100*time.Millisecond), phases), ReportEntryVisibilityAlways)
	}, NodeTimeout(5*time.Minute))

	It("has both clusters accepted, joined and available", func(ctx SpecContext) {
		for _, name := range []string{"cluster1", "cluster2"} {
			mc := &clusterv1.ManagedCluster{}
			Expect(fleet.Hub.APIServer.Client.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
			Expect(mc.Spec.HubAcceptsClient).To(BeTrue(), name)
			for _, cond := range []string{
				clusterv1.ManagedClusterConditionHubAccepted,
				clusterv1.ManagedClusterConditionJoined,
				clusterv1.ManagedClusterConditionAvailable,
			} {
				Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, cond)).To(BeTrue(), "%s %s: %v", name, cond, mc.Status.Conditions)
			}
			Expect(mc.Spec.ManagedClusterClientConfigs).To(ContainElement(HaveField("URL", apiServerURL(fleet.Cluster(name).ControlPlane))))

			// The klusterlet's hub credentials: a client certificate that the hub's
			// kube-controller-manager issued for the approved CSR, from the hub's client CA.
			secret := &corev1.Secret{}
			Expect(fleet.Cluster(name).APIServer.Client.Get(ctx,
				client.ObjectKey{Name: "hub-kubeconfig-secret", Namespace: OCMAgentNamespace}, secret)).To(Succeed())
			Expect(secret.Data).To(HaveKey("kubeconfig"))
			block, _ := pem.Decode(secret.Data["tls.crt"])
			Expect(block).NotTo(BeNil(), "%s: no certificate in tls.crt", name)
			cert, err := x509.ParseCertificate(block.Bytes)
			Expect(err).NotTo(HaveOccurred())
			Expect(cert.Subject.CommonName).To(HavePrefix("system:open-cluster-management:" + name + ":"))
			roots := x509.NewCertPool()
			roots.AddCert(fleet.Hub.ca.cert)
			_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			Expect(err).NotTo(HaveOccurred(), "%s: the hub credentials must chain to the hub's client CA", name)
		}
	})

	It("runs kube-controller-manager on the clusters: namespaces are deleted and dependents collected", func(ctx SpecContext) {
		cluster := fleet.Cluster("cluster2").APIServer.Client
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke-gone"}}
		Expect(cluster.Create(ctx, ns)).To(Succeed())
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}}
		Expect(cluster.Create(ctx, owner)).To(Succeed())
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}
		Expect(cluster.Create(ctx, dependent)).To(Succeed())

		Expect(cluster.Delete(ctx, ns)).To(Succeed())
		Expect(cluster.Delete(ctx, owner)).To(Succeed())
		for _, obj := range []client.Object{ns, dependent} {
			Eventually(func() error {
				return cluster.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "%s %s", obj.GetObjectKind(), obj.GetName())
		}
	})

	It("applies a ManifestWork in cluster1's namespace to cluster1 only and reports it applied and available", func(ctx SpecContext) {
		hub := fleet.Hub.APIServer.Client
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke", Namespace: "default"},
			Data:       map[string]string{"from": "hub"},
		}
		work := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke", Namespace: "cluster1"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
				Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}},
			}},
		}
		Expect(hub.Create(ctx, work)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(fleet.Cluster("cluster1").APIServer.Client.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKeyWithValue("from", "hub"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &workv1.ManifestWork{}
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(work), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "%v", got.Status.Conditions)
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkAvailable)).To(BeTrue(), "%v", got.Status.Conditions)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		err := fleet.Cluster("cluster2").APIServer.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Expect(err).To(HaveOccurred(), "cluster2 must not get cluster1's work")
	})

	It("has OCM's addon-manager own a ManagedClusterAddOn by its ClusterManagementAddOn", func(ctx SpecContext) {
		hub := fleet.Hub.APIServer.Client
		cma := &addonv1alpha1.ClusterManagementAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke"},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			},
		}
		Expect(hub.Create(ctx, cma)).To(Succeed())
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke", Namespace: "cluster1"}}
		Expect(hub.Create(ctx, mca)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(mca), got)).To(Succeed())
			g.Expect(got.OwnerReferences).To(ContainElement(And(
				HaveField("Kind", "ClusterManagementAddOn"),
				HaveField("Name", cma.Name),
				HaveField("UID", cma.UID),
			)))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("issues an addon agent its hub credentials through addon registration", func(ctx SpecContext) {
		hub := fleet.Hub.APIServer.Client
		// What the addon-framework manager does for an addon with registration: declare a
		// kube-apiserver-client registration in the ManagedClusterAddOn's status.
		const installNamespace = "open-cluster-management-agent-addon"
		Expect(fleet.Cluster("cluster1").APIServer.Client.Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNamespace}})).To(Succeed())
		Eventually(func(g Gomega) {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: "fleet-smoke", Namespace: "cluster1"}, mca)).To(Succeed())
			patch := client.MergeFromWithOptions(mca.DeepCopy(), client.MergeFromWithOptimisticLock{})
			mca.Status.Namespace = installNamespace
			mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: certificatesv1.KubeAPIServerClientSignerName}}
			g.Expect(hub.Status().Patch(ctx, mca, patch)).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		// The klusterlet requests a certificate for the addon; approve it as the addon's
		// manager would, and the hub's kube-controller-manager signs it.
		cs, err := kubernetes.NewForConfig(fleet.Hub.APIServer.Config)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
				LabelSelector: addonv1alpha1.AddonLabelKey + "=fleet-smoke," + clusterv1.ClusterNameLabelKey + "=cluster1",
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(csrs.Items).NotTo(BeEmpty())
			for i := range csrs.Items {
				csr := &csrs.Items[i]
				if len(csr.Status.Conditions) > 0 {
					continue
				}
				csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
					Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "FleetSmoke",
				}}
				_, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
				g.Expect(err).NotTo(HaveOccurred())
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(fleet.Cluster("cluster1").APIServer.Client.Get(ctx,
				client.ObjectKey{Name: "fleet-smoke-hub-kubeconfig", Namespace: installNamespace}, secret)).To(Succeed())
			g.Expect(secret.Data).To(HaveKey("kubeconfig"))
			g.Expect(secret.Data).To(HaveKeyWithValue("tls.crt", Not(BeEmpty())))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("installs an addon on the clusters its Placements install strategy selects", func(ctx SpecContext) {
		hub := fleet.Hub.APIServer.Client
		// Placements pick from the ManagedClusterSets bound to their namespace; OCM's
		// "global" set holds every cluster.
		Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke"}})).To(Succeed())
		Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: "fleet-smoke"},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"},
		})).To(Succeed())
		Expect(hub.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: "fleet-smoke"}})).To(Succeed())
		Expect(hub.Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "fleet-smoke-placed"},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{
				Type: addonv1alpha1.AddonInstallStrategyPlacements,
				Placements: []addonv1alpha1.PlacementStrategy{{
					PlacementRef: addonv1alpha1.PlacementRef{Name: "all", Namespace: "fleet-smoke"},
				}},
			}},
		})).To(Succeed())

		Eventually(func(g Gomega) {
			for _, cluster := range []string{"cluster1", "cluster2"} {
				g.Expect(hub.Get(ctx, client.ObjectKey{Name: "fleet-smoke-placed", Namespace: cluster}, &addonv1alpha1.ManagedClusterAddOn{})).To(Succeed(), cluster)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})
