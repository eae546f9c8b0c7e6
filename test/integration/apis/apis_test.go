package apis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
)

var testNamespaces = []string{"argocd", "cluster1"}

var _ = BeforeEach(func(ctx context.Context) {
	for _, ns := range testNamespaces {
		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
})

// roundTrip creates obj, reads it back into a fresh object of the same type and returns it.
func roundTrip(ctx context.Context, obj client.Object) client.Object {
	GinkgoHelper()
	Expect(k8s.Create(ctx, obj)).To(Succeed())
	got, ok := obj.DeepCopyObject().(client.Object)
	Expect(ok).To(BeTrue())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, got))).To(Succeed())
	})
	return got
}

func newReport(name string) *appsv1alpha1.ApplicationStatusReport {
	started := metav1.Date(2026, 11, 1, 10, 0, 0, 0, metav1.Now().Location())
	finished := metav1.Date(2026, 11, 1, 10, 0, 30, 0, started.Location())
	return &appsv1alpha1.ApplicationStatusReport{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cluster1"},
		Source: appsv1alpha1.ApplicationReportSource{
			Cluster:                 "cluster1",
			Namespace:               "argocd",
			Name:                    "cluster1-guestbook-app",
			UID:                     "7c0e3f5c-0b9a-4d5e-9b7e-1f2a3b4c5d6e",
			HubApplicationNamespace: "argocd",
			HubApplicationName:      "cluster1-guestbook-app",
			ApplicationSet:          "argocd/guestbook-app",
		},
		Status: appsv1alpha1.ApplicationReportStatus{
			ObservedAt: finished,
			Sync:       appsv1alpha1.SyncReport{Status: appsv1alpha1.SyncStatusOutOfSync, Revision: "8f3c2b1"},
			Health:     appsv1alpha1.HealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "Deployment guestbook-ui has 0 ready replicas"},
			OperationState: &appsv1alpha1.OperationStateReport{
				Phase:      appsv1alpha1.OperationFailed,
				Message:    "one or more objects failed to apply",
				StartedAt:  &started,
				FinishedAt: &finished,
			},
			Conditions: []appsv1alpha1.ApplicationConditionReport{{
				Type:               "SyncError",
				Message:            `Service "guestbook-ui" is invalid: spec.ports[0].port: Invalid value: 0`,
				LastTransitionTime: &finished,
			}},
			Resources: []appsv1alpha1.ResourceStatusReport{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
					Status: appsv1alpha1.SyncStatusSynced,
					Health: &appsv1alpha1.ResourceHealthReport{Status: appsv1alpha1.HealthStatusDegraded, Message: "0/1 ready"}},
				{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: appsv1alpha1.SyncStatusOutOfSync},
			},
			Truncation: &appsv1alpha1.Truncation{OmittedResources: 3, ShortenedMessages: 1},
		},
	}
}

func newAppSetReport(name string) *appsv1alpha1.MulticlusterApplicationSetReport {
	return &appsv1alpha1.MulticlusterApplicationSetReport{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd",
			Labels: map[string]string{appsv1alpha1.LabelHostingApplicationSet: "argocd." + name}},
		Statuses: appsv1alpha1.AppConditions{
			Resources: []appsv1alpha1.ResourceRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "guestbook-ui", Namespace: "guestbook"}},
			ClusterConditions: []appsv1alpha1.ClusterCondition{{
				Cluster: "cluster1", App: "argocd/cluster1-" + name + "/cluster1/cluster1-" + name + "-7c0e3",
				SyncStatus: "Synced", HealthStatus: "Progressing", OperationStatePhase: "Succeeded",
				OperationStateStartedAt: "2026-11-01T10:00:00Z", SyncRevision: "8f3c2b1",
				Conditions: []appsv1alpha1.Condition{{Type: "SyncError", Message: "boom"}},
			}},
			Summary: appsv1alpha1.ReportSummary{Clusters: "2", Healthy: "1", NotHealthy: "1", InProgress: "1", Synced: "2", NotSynced: "0", AgentsUnavailable: "1"},
		},
	}
}

func newGitOpsCluster(name string) *appsv1beta1.GitOpsCluster {
	return &appsv1beta1.GitOpsCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd"},
		Spec: appsv1beta1.GitOpsClusterSpec{
			ArgoServer: appsv1beta1.ArgoServerSpec{ArgoNamespace: "argocd"},
			PlacementRef: &corev1.ObjectReference{
				APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement", Name: "guestbook-app-placement"},
			CreateBlankClusterSecrets: ptr.To(true),
		},
	}
}

var _ = Describe("our APIs round-trip unchanged", func() {
	It("keeps every field of an ApplicationStatusReport", func(ctx context.Context) {
		want := newReport("argocd.guestbook")
		got := roundTrip(ctx, want.DeepCopy()).(*appsv1alpha1.ApplicationStatusReport)
		Expect(cmp.Diff(want.Source, got.Source)).To(BeEmpty())
		Expect(cmp.Diff(want.Status, got.Status)).To(BeEmpty())
	})

	It("keeps every field of a MulticlusterApplicationSetReport, string counters included", func(ctx context.Context) {
		want := newAppSetReport("guestbook-app")
		got := roundTrip(ctx, want.DeepCopy()).(*appsv1alpha1.MulticlusterApplicationSetReport)
		Expect(cmp.Diff(want.Statuses, got.Statuses)).To(BeEmpty())
		Expect(got.Labels).To(HaveKeyWithValue(appsv1alpha1.LabelHostingApplicationSet, "argocd.guestbook-app"))
	})

	It("writes a MulticlusterApplicationSetReport's summary with the established JSON names, and agentsUnavailable", func(ctx context.Context) {
		roundTrip(ctx, newAppSetReport("json-names"))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appsv1alpha1.GroupVersion.WithKind("MulticlusterApplicationSetReport"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "argocd", Name: "json-names"}, u)).To(Succeed())
		summary, found, err := unstructured.NestedStringMap(u.Object, "statuses", "summary")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(summary).To(Equal(map[string]string{
			"clusters": "2", "healthy": "1", "notHealthy": "1", "inProgress": "1", "synced": "2", "notSynced": "0",
			"agentsUnavailable": "1"}))
		conds, _, err := unstructured.NestedSlice(u.Object, "statuses", "clusterConditions")
		Expect(err).NotTo(HaveOccurred())
		Expect(conds).To(HaveLen(1))
		Expect(conds[0]).To(HaveKey("operationStatePhase"))
		Expect(conds[0]).To(HaveKey("operationStateStartedAt"))
		Expect(conds[0]).To(HaveKey("syncRevision"))
	})

	It("keeps a GitOpsCluster's spec, and its status through the status subresource", func(ctx context.Context) {
		want := newGitOpsCluster("importer")
		got := roundTrip(ctx, want.DeepCopy()).(*appsv1beta1.GitOpsCluster)
		Expect(cmp.Diff(want.Spec, got.Spec)).To(BeEmpty())

		got.Status = appsv1beta1.GitOpsClusterStatus{
			Phase: appsv1beta1.PhaseFailed, Message: "placement argocd/missing not found", ClusterCount: 2,
			LastUpdateTime: metav1.Date(2026, 11, 1, 10, 0, 0, 0, metav1.Now().Location()),
			Conditions: []metav1.Condition{{Type: "PlacementResolved", Status: metav1.ConditionFalse, Reason: "PlacementNotFound",
				Message: "placement argocd/missing not found", LastTransitionTime: metav1.Date(2026, 11, 1, 10, 0, 0, 0, metav1.Now().Location())}},
		}
		Expect(k8s.Status().Update(ctx, got)).To(Succeed())
		again := &appsv1beta1.GitOpsCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(got), again)).To(Succeed())
		Expect(cmp.Diff(got.Status, again.Status)).To(BeEmpty())
	})
})

var _ = Describe("OCM and Argo CD APIs are served", func() {
	DescribeTable("round-trips",
		func(ctx context.Context, obj client.Object, field func(client.Object) any) {
			want := field(obj)
			got := roundTrip(ctx, obj)
			Expect(field(got)).To(Equal(want))
		},
		Entry("ManagedCluster", &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			func(o client.Object) any { return o.(*clusterv1.ManagedCluster).Spec.HubAcceptsClient }),
		Entry("Placement", &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "argocd"},
			Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"default"}}},
			func(o client.Object) any { return o.(*clusterv1beta1.Placement).Spec.ClusterSets }),
		Entry("PlacementDecision", &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "p-decision-1", Namespace: "argocd",
			Labels: map[string]string{clusterv1beta1.PlacementLabel: "p"}}},
			func(o client.Object) any { return o.GetLabels() }),
		Entry("ManifestWork", &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "cluster1"},
			Spec: workv1.ManifestWorkSpec{DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}}},
			func(o client.Object) any { return o.(*workv1.ManifestWork).Spec.DeleteOption.PropagationPolicy }),
		Entry("ClusterManagementAddOn", &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull"},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{AddOnMeta: addonv1alpha1.AddOnMeta{DisplayName: "Argo CD pull"},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}}},
			func(o client.Object) any { return o.(*addonv1alpha1.ClusterManagementAddOn).Spec.AddOnMeta.DisplayName }),
		Entry("ManagedClusterAddOn", &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "argocd-pull", Namespace: "cluster1"},
			Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "argocd-pull-agent"}},
			func(o client.Object) any { return o.(*addonv1alpha1.ManagedClusterAddOn).Spec.InstallNamespace }),
		Entry("AddOnDeploymentConfig", &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "argocd"},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "argocd-pull-agent"}},
			func(o client.Object) any { return o.(*addonv1alpha1.AddOnDeploymentConfig).Spec.AgentInstallNamespace }),
		Entry("Application", builders.Application("a").Health("Healthy", "").Build(),
			func(o client.Object) any {
				app := o.(*argov1alpha1.Application)
				return []any{app.Spec.Source.Path, app.Status.Health.Status}
			}),
		Entry("ApplicationSet", &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "argocd"},
			Spec: argov1alpha1.ApplicationSetSpec{Generators: []argov1alpha1.ApplicationSetGenerator{{List: &argov1alpha1.ListGenerator{}}},
				Template: argov1alpha1.ApplicationSetTemplate{ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{Name: "{{name}}"}}}},
			func(o client.Object) any { return o.(*argov1alpha1.ApplicationSet).Spec.Template.Name }),
		Entry("AppProject", &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd"},
			Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"}}},
			func(o client.Object) any { return o.(*argov1alpha1.AppProject).Spec.SourceRepos }),
	)
})

var _ = Describe("schema validation refuses malformed objects", func() {
	expectInvalid := func(ctx context.Context, obj client.Object, says ...string) {
		GinkgoHelper()
		err := k8s.Create(ctx, obj)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		for _, s := range says {
			Expect(err.Error()).To(ContainSubstring(s))
		}
	}

	It("refuses a GitOpsCluster without placementRef", func(ctx context.Context) {
		g := newGitOpsCluster("no-placement")
		g.Spec.PlacementRef = nil
		expectInvalid(ctx, g, "spec.placementRef: Required value")
	})

	It("refuses a GitOpsCluster without an Argo CD namespace", func(ctx context.Context) {
		g := newGitOpsCluster("no-argo-namespace")
		g.Spec.ArgoServer.ArgoNamespace = ""
		expectInvalid(ctx, g, "spec.argoServer.argoNamespace")
	})

	It("refuses a report with an unknown health value", func(ctx context.Context) {
		r := newReport("bad-health")
		r.Status.Health.Status = "Great"
		expectInvalid(ctx, r, "status.health.status", `Unsupported value: "Great"`)
	})

	It("refuses a report with an unknown resource sync status", func(ctx context.Context) {
		r := newReport("bad-sync")
		r.Status.Resources[0].Status = "AlmostSynced"
		expectInvalid(ctx, r, "status.resources[0].status", `Unsupported value: "AlmostSynced"`)
	})

	It("refuses a report without the cluster it comes from", func(ctx context.Context) {
		r := newReport("no-cluster")
		r.Source.Cluster = ""
		expectInvalid(ctx, r, "source.cluster")
	})

	It("accepts a message of exactly MaxMessageLength and refuses one character more", func(ctx context.Context) {
		r := newReport("longest-message")
		r.Status.Health.Message = strings.Repeat("x", appsv1alpha1.MaxMessageLength)
		roundTrip(ctx, r)

		r = newReport("over-long-message")
		r.Status.Health.Message = strings.Repeat("x", appsv1alpha1.MaxMessageLength+1)
		expectInvalid(ctx, r, "status.health.message", "Too long")

		r = newReport("over-long-condition")
		r.Status.Conditions[0].Message = strings.Repeat("x", appsv1alpha1.MaxMessageLength+1)
		expectInvalid(ctx, r, "status.conditions[0].message", "Too long")
	})

	It("accepts MaxResources resources and refuses one more", func(ctx context.Context) {
		resources := func(n int) []appsv1alpha1.ResourceStatusReport {
			out := make([]appsv1alpha1.ResourceStatusReport, n)
			for i := range out {
				out[i] = appsv1alpha1.ResourceStatusReport{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: fmt.Sprintf("cm-%d", i)}
			}
			return out
		}
		r := newReport("most-resources")
		r.Status.Resources = resources(appsv1alpha1.MaxResources)
		roundTrip(ctx, r)

		r = newReport("too-many-resources")
		r.Status.Resources = resources(appsv1alpha1.MaxResources + 1)
		expectInvalid(ctx, r, "status.resources", "Too many")
	})

	It("refuses a resource message over MaxResourceMessageLength", func(ctx context.Context) {
		r := newReport("long-resource-message")
		r.Status.Resources[0].Health.Message = strings.Repeat("x", appsv1alpha1.MaxResourceMessageLength+1)
		expectInvalid(ctx, r, "status.resources[0].health.message", "Too long")
	})
})

var _ = Describe("what kubectl shows", func() {
	// `kubectl get ocm` and `kubectl get argocd-pull` list the resources of those
	// categories, and short names stand for the resource: both come from discovery.
	DescribeTable("serves categories and short names through discovery",
		func(groupVersion, resource string, shortNames ...string) {
			dc, err := discovery.NewDiscoveryClientForConfig(apiServer.Config)
			Expect(err).NotTo(HaveOccurred())
			list, err := dc.ServerResourcesForGroupVersion(groupVersion)
			Expect(err).NotTo(HaveOccurred())
			var found *metav1.APIResource
			for i := range list.APIResources {
				if list.APIResources[i].Name == resource {
					found = &list.APIResources[i]
				}
			}
			Expect(found).NotTo(BeNil(), "%s not served in %s", resource, groupVersion)
			Expect(found.Categories).To(ConsistOf("ocm", "argocd-pull"))
			Expect(found.ShortNames).To(ConsistOf(shortNames))
		},
		Entry("GitOpsCluster", appsv1beta1.GroupVersion.String(), "gitopsclusters", "gitopsclusters", "gitopscluster", "goc"),
		Entry("MulticlusterApplicationSetReport", appsv1alpha1.GroupVersion.String(), "multiclusterapplicationsetreports",
			"appsetreport", "appsetreports", "mcasr"),
		Entry("ApplicationStatusReport", appsv1alpha1.GroupVersion.String(), "applicationstatusreports",
			"appstatusreport", "appstatusreports", "asr"),
	)

	It("prints a GitOpsCluster's phase and registered clusters", func(ctx context.Context) {
		gc := roundTrip(ctx, newGitOpsCluster("columns")).(*appsv1beta1.GitOpsCluster)
		gc.Status = appsv1beta1.GitOpsClusterStatus{Phase: appsv1beta1.PhaseSuccessful, ClusterCount: 3}
		Expect(k8s.Status().Update(ctx, gc)).To(Succeed())
		table := getTable(ctx, "/apis/apps.open-cluster-management.io/v1beta1/namespaces/argocd/gitopsclusters/columns")
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		Expect(names).To(Equal([]string{"Name", "Placement", "Argo CD Namespace", "Phase", "Clusters", "Age"}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells[3:5]).To(Equal([]any{"successful", float64(3)})) // JSON numbers
	})

	It("prints clusters, healthy, synced, in progress, not synced, not healthy and agents unavailable columns from the summary", func(ctx context.Context) {
		roundTrip(ctx, newAppSetReport("columns"))
		table := getTable(ctx, "/apis/apps.open-cluster-management.io/v1alpha1/namespaces/argocd/multiclusterapplicationsetreports/columns")
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		Expect(names).To(Equal([]string{"Name", "Clusters", "Healthy", "Synced", "In Progress", "Not Synced", "Not Healthy", "Agents Unavailable", "Age"}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells[:8]).To(Equal([]any{"columns", "2", "1", "2", "1", "0", "1", "1"}))
	})
})

// getTable asks the API server for path as kubectl does, as a meta.k8s.io Table.
func getTable(ctx context.Context, path string) *metav1.Table {
	GinkgoHelper()
	dc, err := discovery.NewDiscoveryClientForConfig(apiServer.Config)
	Expect(err).NotTo(HaveOccurred())
	raw, err := dc.RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	table := &metav1.Table{}
	Expect(json.Unmarshal(raw, table)).To(Succeed())
	return table
}
