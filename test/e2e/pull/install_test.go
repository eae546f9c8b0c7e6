//go:build e2e

package pull_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// The README's "Install on an OCM hub", tried as a new user would: its commands in its
// order, with the same flags, run with the real helm and clusteradm. `make test-e2e` ran
// the first one, `make chart-repo`, into CHART_REPO_DIR; this scenario serves that
// directory over HTTP on 127.0.0.1, as the README's static HTTP server does, adds it as the
// `ocm` Helm repository, runs `clusteradm install hub-addon --names argocd`, then `clusteradm
// addon enable` and `disable`.
//
// `install hub-addon` runs against a fresh hub API server of its own, not the fleet's: the
// fleet's hub holds the chart's objects already (the harness applied the rendered chart to
// run our manager as its ServiceAccount), which Helm refuses to take over, and the manager a
// second install would add would compete with the fleet's for every ManifestWork. The fresh
// hub has what a hub has before the chart: OCM's CRDs (clusteradm checks it is a hub by the
// ManagedCluster API) and Argo CD's. `addon enable` and `disable` need what the chart
// installs plus a joined cluster and a running manager, so they run against the fleet's hub,
// on hubRenderedCluster: no other scenario has the addon there, so enabling and then
// disabling it changes nothing for them (the hub-rendered scenario checks the addon is
// absent there: the clean-up disables it even when a step fails).
//
// Helm keeps its repository list and cache in a directory of this scenario
// (HELM_REPOSITORY_CONFIG, HELM_REPOSITORY_CACHE and Helm's home directories): clusteradm
// reads them through Helm's library, so the machine's own `ocm` entry is neither used nor
// changed.
const (
	// installAgentNamespace is where `clusteradm addon enable --namespace` puts the agent.
	installAgentNamespace = "argocd-pull-agent"
	// chartRepoName is the Helm repository clusteradm installs the chart from.
	chartRepoName = "ocm"
)

// installAgentCluster is where `clusteradm addon enable` puts the agent.
var installAgentCluster = hubRenderedCluster

var _ = Describe("Installing as the README says", Ordered, func() {
	var (
		sh        *readmeShell
		repoURL   string
		chartMeta struct{ name, version string }
	)

	BeforeAll(func() {
		sh = newReadmeShell(filepath.Join(fleetDir, "install"))
		dir := requiredEnvPath("CHART_REPO_DIR", "the directory `make chart-repo` wrote")
		Expect(filepath.Join(dir, "index.yaml")).To(BeAnExistingFile(), "CHART_REPO_DIR holds no index.yaml")
		By("serving " + dir + " over HTTP, as the README's static HTTP server does")
		server := httptest.NewServer(http.FileServer(http.Dir(dir)))
		DeferCleanup(server.Close)
		repoURL = server.URL

		root, err := framework.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		md, err := chartutil.LoadChartfile(filepath.Join(root, "charts", framework.ChartName, "Chart.yaml"))
		Expect(err).NotTo(HaveOccurred())
		chartMeta.name, chartMeta.version = md.Name, md.Version

		DeferCleanup(func(ctx SpecContext) {
			// Whatever step failed, leave installAgentCluster without the addon, as the
			// other scenarios expect it.
			Expect(pull.StopAgent(installAgentCluster)).To(Succeed())
			Expect(client.IgnoreNotFound(hub.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{
				ObjectMeta: metav1.ObjectMeta{Namespace: installAgentCluster, Name: apps.AddonName},
			}))).To(Succeed())
		})
	})

	It("installs this chart with `clusteradm install hub-addon --names argocd` from the repository added as ocm", func(ctx SpecContext) {
		By("starting a fresh hub API server: OCM's and Argo CD's CRDs, not ours")
		freshHub, err := framework.StartAPIServerWith(framework.APIServerOptions{WithoutPullAddonCRDs: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(freshHub.Stop)
		kubeconfig := filepath.Join(sh.dir, "fresh-hub.kubeconfig")
		Expect(os.WriteFile(kubeconfig, freshHub.Env.KubeConfig, 0o600)).To(Succeed())
		c := freshHub.Client

		sh.run(ctx, sh.helm, "repo", "add", chartRepoName, repoURL, "--force-update")
		sh.kubeconfig = kubeconfig
		sh.run(ctx, sh.clusteradm, "install", "hub-addon", "--names", "argocd", "--create-namespace")

		By("helm list: the release of this chart, deployed")
		var releases []struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			Status    string `json:"status"`
			Chart     string `json:"chart"`
		}
		out := sh.run(ctx, sh.helm, "list", "-n", framework.ChartNamespace, "-o", "json")
		Expect(json.Unmarshal([]byte(out), &releases)).To(Succeed(), out)
		Expect(releases).To(ConsistOf(And(
			HaveField("Name", framework.ChartName),
			HaveField("Namespace", framework.ChartNamespace),
			HaveField("Status", "deployed"),
			// NAME-VERSION of the chart in this checkout: the one `make chart-repo` packaged.
			HaveField("Chart", chartMeta.name+"-"+chartMeta.version),
		)))

		By("the CRDs served, the argocd-pull ClusterManagementAddOn, the manager's Deployment and ServiceAccount")
		for _, crd := range []string{"gitopsclusters", "multiclusterapplicationsetreports", "applicationstatusreports"} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKey{Name: crd + ".apps.open-cluster-management.io"}, u)).To(Succeed())
				conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				g.Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))))
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		}
		Expect(c.Get(ctx, client.ObjectKey{Name: apps.AddonName}, &addonv1alpha1.ClusterManagementAddOn{})).To(Succeed())
		// The older upstream chart of the public repository registers addon "argocd".
		err = c.Get(ctx, client.ObjectKey{Name: "argocd"}, &addonv1alpha1.ClusterManagementAddOn{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterManagementAddOn argocd: %v", err)
		dep := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: fleet.PullManagerServiceAccount}, dep)).To(Succeed())
		Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal(fleet.PullManagerServiceAccount))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: fleet.PullManagerServiceAccount}, &corev1.ServiceAccount{})).To(Succeed())
	}, NodeTimeout(4*time.Minute))

	It("enables the addon on a cluster with `clusteradm addon enable`, and the agent is installed and runs there", func(ctx SpecContext) {
		sh.kubeconfig = theFleet.Hub.KubeconfigFile
		sh.run(ctx, sh.clusteradm, "addon", "enable", "--names", apps.AddonName, "--clusters", installAgentCluster, "--namespace", installAgentNamespace)

		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: installAgentCluster, Name: apps.AddonName}, mca)).To(Succeed())
		Expect(mca.Spec.InstallNamespace).To(Equal(installAgentNamespace))

		By("the agent's Deployment, ServiceAccount and hub credentials (from addon registration) on " + installAgentCluster)
		spoke := theFleet.Cluster(installAgentCluster).APIServer.Client
		Eventually(func(g Gomega) {
			for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}} {
				g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: installAgentNamespace, Name: fleet.PullAgentName}, obj)).To(Succeed(), "%T", obj)
			}
			secret := &corev1.Secret{}
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: installAgentNamespace, Name: fleet.PullAgentHubKubeconfigSecret}, secret)).To(Succeed())
			g.Expect(secret.Data).To(HaveKey("tls.crt"), "the agent's signed client certificate")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		// The fleet's API servers all serve Argo CD's CRDs, but this cluster runs no Argo CD:
		// it has no namespace argocd, the agent's default watched namespace.
		By("starting the agent where its Deployment would run it: it reports, on its ManagedClusterAddOn, that its watched namespace argocd is missing")
		Expect(pull.StartAgent(ctx, installAgentCluster, installAgentNamespace)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: installAgentCluster, Name: apps.AddonName}, mca)).To(Succeed())
			watched := meta.FindStatusCondition(mca.Status.Conditions, apps.ConditionApplicationsWatched)
			g.Expect(watched).NotTo(BeNil(), "condition %s on %v", apps.ConditionApplicationsWatched, mca.Status.Conditions)
			g.Expect(watched.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(watched.Reason).To(Equal(apps.ReasonWatchedNamespaceMissing))
			g.Expect(watched.Message).To(ContainSubstring(argoNS))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}, NodeTimeout(5*time.Minute))

	It("disables it with `clusteradm addon disable`, and the agent leaves the cluster", func(ctx SpecContext) {
		sh.kubeconfig = theFleet.Hub.KubeconfigFile
		sh.run(ctx, sh.clusteradm, "addon", "disable", "--names", apps.AddonName, "--clusters", installAgentCluster)
		spoke := theFleet.Cluster(installAgentCluster).APIServer.Client
		Eventually(func(g Gomega) {
			err := hub.Get(ctx, client.ObjectKey{Namespace: installAgentCluster, Name: apps.AddonName}, &addonv1alpha1.ManagedClusterAddOn{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ManagedClusterAddOn: %v", err)
			for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}} {
				err := spoke.Get(ctx, client.ObjectKey{Namespace: installAgentNamespace, Name: fleet.PullAgentName}, obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", obj, fleet.PullAgentName, err)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// Its Deployment is gone: a kubelet would stop the agent's pod now.
		Expect(pull.StopAgent(installAgentCluster)).To(Succeed())
	}, NodeTimeout(3*time.Minute))
})

// readmeShell runs the README's commands: helm and clusteradm as built by the Makefile
// (HELM, CLUSTERADM), with Helm's configuration in dir and KUBECONFIG set to kubeconfig,
// as the README exports it.
type readmeShell struct {
	dir, helm, clusteradm string
	kubeconfig            string
}

func newReadmeShell(dir string) *readmeShell {
	GinkgoHelper()
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	return &readmeShell{
		dir:        dir,
		helm:       requiredEnvPath("HELM", "helm, built by `make helm`"),
		clusteradm: requiredEnvPath("CLUSTERADM", "clusteradm, built by `make clusteradm`"),
	}
}

// run runs name with args, prints the command and its output, and returns its standard
// output; the spec fails when it exits non-zero.
func (s *readmeShell) run(ctx SpecContext, name string, args ...string) string {
	GinkgoHelper()
	line := filepath.Base(name) + " " + strings.Join(args, " ")
	By("$ " + line)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.dir
	// Later entries win: Helm's files and HOME (kubectl's discovery cache) in the
	// scenario's directory, and the kubeconfig the README exports.
	cmd.Env = append(os.Environ(),
		"HOME="+filepath.Join(s.dir, "home"),
		"HELM_CONFIG_HOME="+filepath.Join(s.dir, "helm", "config"),
		"HELM_CACHE_HOME="+filepath.Join(s.dir, "helm", "cache"),
		"HELM_DATA_HOME="+filepath.Join(s.dir, "helm", "data"),
		"HELM_REPOSITORY_CONFIG="+filepath.Join(s.dir, "helm", "repositories.yaml"),
		"HELM_REPOSITORY_CACHE="+filepath.Join(s.dir, "helm", "repository-cache"),
		"KUBECONFIG="+s.kubeconfig,
	)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	GinkgoWriter.Printf("$ %s\n%s%s\n", line, stdout.String(), stderr.String())
	Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("$ %s\n%s%s", line, stdout.String(), stderr.String()))
	return stdout.String()
}

// requiredEnvPath is the file or directory the environment variable name gives; the spec
// fails when it is unset or does not exist (`make test-e2e` sets it).
func requiredEnvPath(name, what string) string {
	GinkgoHelper()
	p := os.Getenv(name)
	Expect(p).NotTo(BeEmpty(), "%s is not set: it names %s (`make test-e2e` sets it)", name, what)
	_, err := os.Stat(p)
	Expect(err).NotTo(HaveOccurred(), "%s (%s)", name, what)
	return p
}
