package chartlifecycle_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/finalizers"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// previousChart is the chart as released before CRDs became templates: version 0.1.0, its
// CRDs under crds/ (packaged from the repository at that version).
const previousChart = "testdata/argocd-pull-integration-0.1.0.tgz"

const gitOpsCRD = "gitopsclusters.apps.open-cluster-management.io"

// What the hub holds before the upgrade, and what must come out of it untouched.
var (
	gitOpsCluster = &appsv1beta1.GitOpsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: framework.ChartNamespace, Name: "fleet",
		// As the manager sets it on every GitOpsCluster it reconciles.
		Finalizers: []string{appsv1beta1.GitOpsClusterFinalizer}},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer:   appsv1beta1.ArgoServerSpec{ArgoNamespace: framework.ChartNamespace},
			PlacementRef: &corev1.ObjectReference{Kind: "Placement", APIVersion: "cluster.open-cluster-management.io/v1beta1", Name: "all"},
		}}
	// A pulled hub Application with Argo CD's resources finalizer: only the manager releases it.
	pulledApp = builders.Application("guestbook").Namespace(framework.ChartNamespace).Pulled().Cluster("cluster1").
			Finalizer(pullmodel.ResourcesFinalizer).Build()
	// A hub Application the hub's Argo CD runs itself: its finalizer is Argo CD's to release.
	hubApp = builders.Application("hub-local").Namespace(framework.ChartNamespace).
		Finalizer(pullmodel.ResourcesFinalizer).Build()
	// cluster1's agent's report of the pulled Application.
	report = &appsv1alpha1.ApplicationStatusReport{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "guestbook"},
		Source: appsv1alpha1.ApplicationReportSource{Cluster: "cluster1", Namespace: "argocd", Name: "guestbook",
			HubApplicationNamespace: framework.ChartNamespace, HubApplicationName: "guestbook"},
		Status: *builders.ReportStatus(metav1.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)).
			State(appsv1alpha1.HealthStatusHealthy, "", appsv1alpha1.SyncStatusSynced, "abc123").Build()}
	// The pulled Application's ManifestWork, as propagation delivered it to cluster1.
	work = &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "guestbook-work"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"payload","namespace":"default"}}`)}}}}}}
)

// objectState is what a re-creation or a rewrite of an object changes.
type objectState struct {
	UID             string
	ResourceVersion string
	Generation      int64
}

func stateOf(ctx context.Context, obj client.Object) objectState {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return objectState{string(obj.GetUID()), obj.GetResourceVersion(), obj.GetGeneration()}
}

// writeClusterCount writes status.clusterCount of the GitOpsCluster as the manager does,
// and returns what the API server stored.
func writeClusterCount(ctx context.Context, n int32) int32 {
	GinkgoHelper()
	gc := &appsv1beta1.GitOpsCluster{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gitOpsCluster), gc)).To(Succeed())
	gc.Status.Phase, gc.Status.ClusterCount = appsv1beta1.PhaseSuccessful, n
	Expect(k8s.Status().Update(ctx, gc)).To(Succeed())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gitOpsCluster), gc)).To(Succeed())
	Expect(gc.Status.Phase).To(Equal(appsv1beta1.PhaseSuccessful))
	return gc.Status.ClusterCount
}

// writeComparedSources writes status.sync.comparedSources of the report as the agent does
// (a field 0.1.0's schema lacks too), and returns what the API server stored.
func writeComparedSources(ctx context.Context, digest string) string {
	GinkgoHelper()
	r := &appsv1alpha1.ApplicationStatusReport{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(report), r)).To(Succeed())
	r.Status.Sync.ComparedSources = digest
	Expect(k8s.Update(ctx, r)).To(Succeed())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(report), r)).To(Succeed())
	return r.Status.Sync.ComparedSources
}

func crdHasClusterCount(crd *apiextensionsv1.CustomResourceDefinition) bool {
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	_, ok := status.Properties["clusterCount"]
	return ok
}

func currentChartDir() string {
	GinkgoHelper()
	root, err := framework.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	return filepath.Join(root, "charts", framework.ChartName)
}

var _ = Describe("The hub chart's lifecycle", Ordered, func() {
	var before map[string]objectState
	tracked := func() map[string]client.Object {
		return map[string]client.Object{
			"GitOpsCluster CRD":  &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: gitOpsCRD}},
			"GitOpsCluster":      gitOpsCluster.DeepCopy(),
			"pulled Application": pulledApp.DeepCopy(),
			"ManifestWork":       work.DeepCopy(),
			"report":             report.DeepCopy(),
		}
	}

	It("installs the previous version, whose old schema prunes the new field", func(ctx SpecContext) {
		prev, err := loader.Load(previousChart)
		Expect(err).NotTo(HaveOccurred())
		Expect(prev.Metadata.Version).To(Equal("0.1.0"))
		install := action.NewInstall(helmConfig)
		install.ReleaseName, install.Namespace, install.Timeout = framework.ChartName, framework.ChartNamespace, time.Minute
		_, err = install.RunWithContext(ctx, prev, nil)
		Expect(err).NotTo(HaveOccurred())

		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: gitOpsCRD}, crd)).To(Succeed())
		Expect(crdHasClusterCount(crd)).To(BeFalse())
		Expect(crd.Spec.Names.Categories).To(BeEmpty())

		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}})).To(Succeed())
		for _, obj := range []client.Object{gitOpsCluster.DeepCopy(), pulledApp.DeepCopy(), hubApp.DeepCopy(), work.DeepCopy(), report.DeepCopy()} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		Expect(writeClusterCount(ctx, 3)).To(BeZero(), "the 0.1.0 schema has no status.clusterCount: the API server prunes it")
		Expect(writeComparedSources(ctx, "d1gest")).To(BeEmpty(), "nor status.sync.comparedSources")
	})

	It("upgrades to the current chart: CRDs upgraded in place, nothing re-created or rewritten", func(ctx SpecContext) {
		before = map[string]objectState{}
		for name, obj := range tracked() {
			before[name] = stateOf(ctx, obj)
		}
		cur, err := loader.Load(currentChartDir())
		Expect(err).NotTo(HaveOccurred())

		By("refusing to take over the CRDs 0.1.0 installed from crds/ without --take-ownership")
		upgrade := action.NewUpgrade(helmConfig)
		upgrade.Namespace, upgrade.Timeout = framework.ChartNamespace, time.Minute
		_, err = upgrade.RunWithContext(ctx, framework.ChartName, cur, nil)
		Expect(err).To(MatchError(ContainSubstring("invalid ownership metadata")))

		By("upgrading with --take-ownership, as docs/install.md says")
		upgrade = action.NewUpgrade(helmConfig)
		upgrade.Namespace, upgrade.Timeout, upgrade.TakeOwnership = framework.ChartNamespace, time.Minute, true
		rel, err := upgrade.RunWithContext(ctx, framework.ChartName, cur, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rel.Chart.Metadata.Version).To(Equal(cur.Metadata.Version))

		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: gitOpsCRD}, crd)).To(Succeed())
		Expect(crdHasClusterCount(crd)).To(BeTrue(), "the CRD's schema is the new one")
		Expect(crd.Spec.Names.Categories).To(ConsistOf("ocm", "argocd-pull"))
		Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
		Expect(crd.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", framework.ChartName))

		By("leaving every object as it was: a CRD deleted and re-created would have deleted its objects, a rewrite would re-deliver")
		for name, obj := range tracked() {
			after := stateOf(ctx, obj)
			if name == "GitOpsCluster CRD" {
				// Upgraded in place: same object, new spec.
				Expect(after.UID).To(Equal(before[name].UID), name)
				Expect(after.Generation).To(BeNumerically(">", before[name].Generation), name)
				continue
			}
			Expect(after).To(Equal(before[name]), name)
		}

		By("keeping the new fields written after the upgrade")
		Eventually(func() int32 { return writeClusterCount(ctx, 3) }).Should(Equal(int32(3)))
		Eventually(func() string { return writeComparedSources(ctx, "d1gest") }).Should(Equal("d1gest"))
	})

	It("lists with release-finalizers --dry-run each object and finalizer the hook would release, and writes nothing", func(ctx SpecContext) {
		objects := map[string]client.Object{"GitOpsCluster": gitOpsCluster.DeepCopy(), "pulled Application": pulledApp.DeepCopy(),
			"hub Application": hubApp.DeepCopy()}
		before := map[string]objectState{}
		for name, obj := range objects {
			before[name] = stateOf(ctx, obj)
		}

		var out bytes.Buffer
		cmd := finalizers.NewCommand()
		cmd.SetArgs([]string{"--dry-run", "--kubeconfig", kubeconfig})
		cmd.SetOut(&out)
		cmd.SetErr(GinkgoWriter)
		Expect(cmd.ExecuteContext(ctx)).To(Succeed())
		GinkgoWriter.Print(out.String())

		Expect(strings.Split(strings.TrimSpace(out.String()), "\n")).To(ConsistOf(
			MatchRegexp(`^GitOpsCluster +%s/%s +%s$`, framework.ChartNamespace, gitOpsCluster.Name, regexp.QuoteMeta(appsv1beta1.GitOpsClusterFinalizer)),
			MatchRegexp(`^Application +%s/%s +%s$`, framework.ChartNamespace, pulledApp.Name, regexp.QuoteMeta(pullmodel.ResourcesFinalizer)),
			Equal("Dry run, nothing written: would release the finalizers of 1 GitOpsClusters and 1 pulled Applications"),
		), "the hub's own Application (%s) is Argo CD's to release", hubApp.Name)
		for name, obj := range objects {
			Expect(stateOf(ctx, obj)).To(Equal(before[name]), "%s written by a dry run", name)
			Expect(obj.GetFinalizers()).NotTo(BeEmpty(), name)
		}
	})

	It("uninstalls in the wrong order without leaving a GitOpsCluster or a pulled Application stuck", func(ctx SpecContext) {
		hookRan := runHookJobs(ctx)

		uninstall := action.NewUninstall(helmConfig)
		uninstall.Timeout = 2 * time.Minute
		_, err := uninstall.Run(framework.ChartName)
		Expect(err).NotTo(HaveOccurred())
		Eventually(hookRan).Should(BeClosed(), "the post-delete hook Job ran")

		By("removing the manager and keeping the CRDs (crds.keep)")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: framework.ChartName + "-manager"},
			&appsv1.Deployment{}))).To(BeTrue())
		Expect(k8s.Get(ctx, client.ObjectKey{Name: gitOpsCRD}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())

		By("letting the GitOpsCluster and the pulled Application be deleted with no manager running")
		for _, obj := range []client.Object{gitOpsCluster.DeepCopy(), pulledApp.DeepCopy()} {
			Expect(k8s.Delete(ctx, obj)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
			}).Should(BeTrue(), "%T %s is stuck with finalizers %v", obj, obj.GetName(), obj.GetFinalizers())
		}

		By("leaving the finalizer of an Application the hub's Argo CD runs, and the ManifestWork")
		app := &argov1alpha1.Application{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(hubApp), app)).To(Succeed())
		Expect(app.Finalizers).To(ConsistOf(pullmodel.ResourcesFinalizer))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(work), &workv1.ManifestWork{})).To(Succeed())

		By("deleting the hook's Job and RBAC once it succeeded")
		hookName := framework.ChartName + "-release-finalizers"
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: hookName}, &batchv1.Job{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: framework.ChartNamespace, Name: hookName}, &corev1.ServiceAccount{}))).To(BeTrue())
	})
})

// runHookJobs stands in for the kubelet the test API server lacks, for the hook Jobs of
// one uninstall: it runs each Job's container as the release-finalizers command does in
// the image (its args, through the real command, as the Job's ServiceAccount: the hook's
// RBAC decides), then marks the Job complete or failed as the Job controller would. The
// returned channel closes after the first Job succeeded.
func runHookJobs(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		var job batchv1.Job
		key := client.ObjectKey{Namespace: framework.ChartNamespace, Name: framework.ChartName + "-release-finalizers"}
		Eventually(ctx, func() error { return k8s.Get(ctx, key, &job) }).WithTimeout(time.Minute).Should(Succeed())

		runErr := runJobContainer(ctx, &job)
		now := metav1.Now()
		job.Status.StartTime, job.Status.CompletionTime = &now, nil
		condition := batchv1.JobComplete
		if runErr != nil {
			GinkgoWriter.Printf("hook Job failed: %v\n", runErr)
			condition = batchv1.JobFailed
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
				{Type: condition, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now}}
		} else {
			job.Status.Succeeded, job.Status.CompletionTime = 1, &now
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
				{Type: condition, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now}}
		}
		job.Status.Ready = ptr.To[int32](0)
		Expect(k8s.Status().Update(ctx, &job)).To(Succeed())
		Expect(runErr).NotTo(HaveOccurred())
		close(done)
	}()
	return done
}

func runJobContainer(ctx context.Context, job *batchv1.Job) error {
	spec := job.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.Containers[0].Args) == 0 || spec.Containers[0].Args[0] != "release-finalizers" {
		return fmt.Errorf("the hook Job runs %v, not argocd-pull-addon release-finalizers", spec.Containers)
	}
	user, groups := framework.ServiceAccountUser(job.Namespace, spec.ServiceAccountName)
	kc := filepath.Join(GinkgoT().TempDir(), "hook-kubeconfig")
	if err := framework.WriteImpersonatingKubeconfig(apiServer.Config, kc, user, groups...); err != nil {
		return err
	}
	cmd := finalizers.NewCommand()
	cmd.SetArgs(append(append([]string{}, spec.Containers[0].Args[1:]...), "--kubeconfig", kc))
	cmd.SetOut(GinkgoWriter)
	cmd.SetErr(GinkgoWriter)
	return cmd.ExecuteContext(ctx)
}
