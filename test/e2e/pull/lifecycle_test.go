//go:build e2e

package pull_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// What happens to the guestbook after scenario 1, in this order: cluster1's agent stops
// and starts again (scenario 4); the addon is disabled on cluster2 (7); cluster2 leaves the
// placement (5); the ApplicationSet is deleted (6).
const (
	stoppedCluster  = "cluster1"
	disabledCluster = "cluster2"
	// excludedLabel takes a cluster out of the guestbook's Placement (scenario 5).
	excludedLabel = "e2e.argocd-pull/excluded"
)

func agentStoppedSpecs() {
	var previousHead string

	It("marks the cluster agent-unavailable in the report within the lease window", func(ctx SpecContext) {
		spoke := theFleet.Cluster(stoppedCluster).APIServer.Client
		// How long the hub took, in this run, to mark the addon available once the agent
		// created its Lease (both times the API servers', to the second): one look of the
		// registration agent, which looks every leaseSyncInterval, plus what this machine's
		// load added to it. Not shorter than a look: the timestamps cannot tell less.
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: stoppedCluster, Name: fleet.PullAddonName}, mca)).To(Succeed())
		available := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
		Expect(available).To(HaveField("Status", metav1.ConditionTrue))
		lease := &coordinationv1.Lease{}
		Expect(spoke.Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAddonName}, lease)).To(Succeed())
		hubLag := max(available.LastTransitionTime.Sub(lease.CreationTimestamp.Time), leaseSyncInterval)

		Expect(pull.StopAgent(stoppedCluster)).To(Succeed())
		stopped := time.Now()
		Expect(spoke.Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAddonName}, lease)).To(Succeed())
		renewed := lease.Spec.RenewTime.Time
		// The registration agent marks the addon unavailable once the lease is older than
		// the window, at its next look, which the lag measured above covers; the manager
		// reacts to that at once, and gets as much again. The slack grows with the load
		// this run measured instead of being a constant a loaded machine outgrows.
		window := 5 * leaseDurationSeconds * time.Second
		deadline := renewed.Add(window + 2*hubLag)
		Eventually(func(g Gomega) {
			r := appSetReport(ctx, g)
			e := clusterEntry(g, r, stoppedCluster)
			g.Expect(e.AgentAvailable).To(HaveValue(BeFalse()))
			// The agent's last word stays, marked stale with when it was observed.
			g.Expect(e.Stale).To(BeTrue())
			g.Expect(e.LastReportedAt).NotTo(BeNil())
			g.Expect(e.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1alpha1.ConditionAgentUnavailable),
				HaveField("Message", ContainSubstring("ManagedClusterAddOnLeaseUpdateStopped")))))
			// Sync and health still come from the ManifestWork's feedback.
			g.Expect(e.SyncStatus).To(Equal("Synced"))
			g.Expect(e.HealthStatus).To(Equal("Healthy"))
			g.Expect(clusterEntry(g, r, disabledCluster).AgentAvailable).To(HaveValue(BeTrue()))
		}).WithContext(ctx).WithTimeout(time.Until(deadline)).WithPolling(time.Second).Should(Succeed())
		// Not before the lease ran out: the lease, not something else, marked it.
		Expect(time.Now()).To(BeTemporally(">=", renewed.Add(window)))
		AddReportEntry("agent-unavailable in the report", ReportEntryVisibilityAlways,
			"after the stop: "+time.Since(stopped).Round(time.Second).String()+
				", after the last lease renewal: "+time.Since(renewed).Round(time.Second).String()+
				" (window "+window.String()+", hub lag measured at the start "+hubLag.String()+")")
	})

	It("keeps the cluster's report at what the agent last said while the cluster moves on", func(ctx SpecContext) {
		previousHead = head
		// Argo CD writes an operation's start to the second.
		committed := time.Now().Truncate(time.Second)
		By("committing a new revision of the guestbook")
		Expect(repo.Commit("retitle the guestbook", map[string]string{
			fleet.GuestbookPath: strings.Replace(fleet.GuestbookYAML, "Guestbook from the hub", "Guestbook, second revision", 1),
		})).To(Succeed())
		var err error
		head, err = repo.Head()
		Expect(err).NotTo(HaveOccurred())

		spoke := theFleet.Cluster(stoppedCluster).APIServer.Client
		var startedAt string
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, spoke, argoNS, hubAppName(stoppedCluster))
			g.Expect(nested(app, "status", "sync", "revision")).To(Equal(head))
			g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"))
			// The sync of the new revision, not the last one's operation.
			startedAt = nested(app, "status", "operationState", "startedAt")
			started, err := time.Parse(time.RFC3339, startedAt)
			g.Expect(err).NotTo(HaveOccurred(), "operationState.startedAt %q", startedAt)
			g.Expect(started).To(BeTemporally(">=", committed))
			cm := &corev1.ConfigMap{}
			g.Expect(spoke.Get(ctx, client.ObjectKey{Namespace: guestbookNS, Name: "guestbook-ui"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("title", "Guestbook, second revision"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		// The hub Application follows from the ManifestWork's feedback alone: the agent is
		// stopped, and its report (below) still says the previous revision.
		Eventually(func(g Gomega) {
			app := getApp(ctx, g, hub, argoNS, hubAppName(stoppedCluster))
			g.Expect(nested(app, "status", "sync", "revision")).To(Equal(head))
			g.Expect(nested(app, "status", "operationState", "phase")).To(Equal("Succeeded"))
			g.Expect(nested(app, "status", "operationState", "startedAt")).To(Equal(startedAt))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		rep := statusReport(ctx, Default, stoppedCluster)
		Expect(rep.Status.Sync.Revision).To(Equal(previousHead), "the stopped agent's report")
	})

	It("reports fresh data once the agent starts again", func(ctx SpecContext) {
		restarted := time.Now().Truncate(time.Second)
		Expect(pull.StartAgent(ctx, stoppedCluster, "")).To(Succeed())
		Eventually(func(g Gomega) {
			rep := statusReport(ctx, g, stoppedCluster)
			g.Expect(rep.Status.Sync.Revision).To(Equal(head))
			g.Expect(rep.Status.ObservedAt.Time).To(BeTemporally(">=", restarted))

			e := clusterEntry(g, appSetReport(ctx, g), stoppedCluster)
			g.Expect(e.AgentAvailable).To(HaveValue(BeTrue()))
			g.Expect(e.Stale).To(BeFalse())
			g.Expect(e.Conditions).To(BeEmpty())
			g.Expect(e.SyncRevision).To(Equal(head))
			g.Expect(e.LastReportedAt).To(HaveValue(HaveField("Time", BeTemporally(">=", restarted))))
		}).WithContext(ctx).WithTimeout(leaseSyncInterval + time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("available with fresh data after the restart", time.Since(restarted).Round(time.Second).String())
	})
}

func addonDisabledSpecs() {
	It("removes the agent's manifests from the cluster", func(ctx SpecContext) {
		By("deleting the ManagedClusterAddOn, as `clusteradm addon disable --names argocd-pull --clusters " + disabledCluster + "` does")
		Expect(hub.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: disabledCluster, Name: fleet.PullAddonName},
		})).To(Succeed())
		spoke := theFleet.Cluster(disabledCluster).APIServer.Client
		Eventually(func(g Gomega) {
			for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}} {
				err := spoke.Get(ctx, client.ObjectKey{Namespace: fleet.DefaultAddonInstallNamespace, Name: fleet.PullAgentName}, obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", obj, fleet.PullAgentName, err)
			}
			err := hub.Get(ctx, client.ObjectKey{Namespace: disabledCluster, Name: fleet.PullAddonName}, &addonv1alpha1.ManagedClusterAddOn{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ManagedClusterAddOn: %v", err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// Its Deployment is gone: a kubelet would stop the agent's pod now.
		Expect(pull.StopAgent(disabledCluster)).To(Succeed())
	})

	It("removes the cluster's reports from the hub", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			list := &appsv1alpha1.ApplicationStatusReportList{}
			g.Expect(hub.List(ctx, list, client.InNamespace(disabledCluster))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("keeps delivering the Application, and the report says the addon is not enabled there", func(ctx SpecContext) {
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: disabledCluster, Name: works[disabledCluster]}, &workv1.ManifestWork{})).To(Succeed())
		Eventually(func(g Gomega) {
			r := appSetReport(ctx, g)
			e := clusterEntry(g, r, disabledCluster)
			g.Expect(e.AgentAvailable).To(HaveValue(BeFalse()))
			g.Expect(e.Conditions).To(ConsistOf(And(
				HaveField("Type", appsv1alpha1.ConditionAgentUnavailable),
				HaveField("Message", ContainSubstring("not enabled")))))
			g.Expect(e.LastReportedAt).To(BeNil())
			g.Expect(e.SyncStatus).To(Equal("Synced"))
			g.Expect(clusterEntry(g, r, stoppedCluster).AgentAvailable).To(HaveValue(BeTrue()))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
}

func clusterLeavesPlacementSpecs() {
	It("deletes the cluster's hub Application, its ManifestWork and the Application on the cluster", func(ctx SpecContext) {
		By("labelling " + disabledCluster + " and making the Placement exclude that label")
		mc := &clusterv1.ManagedCluster{}
		Expect(hub.Get(ctx, client.ObjectKey{Name: disabledCluster}, mc)).To(Succeed())
		patch := client.MergeFrom(mc.DeepCopy())
		mc.Labels[excludedLabel] = "true"
		Expect(hub.Patch(ctx, mc, patch)).To(Succeed())
		placement := &clusterv1beta1.Placement{}
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: fleet.GuestbookPlacement}, placement)).To(Succeed())
		patch = client.MergeFrom(placement.DeepCopy())
		placement.Spec.Predicates = []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: excludedLabel, Operator: metav1.LabelSelectorOpDoesNotExist,
			}}},
		}}}
		Expect(hub.Patch(ctx, placement, patch)).To(Succeed())

		start := time.Now()
		spoke := theFleet.Cluster(disabledCluster).APIServer.Client
		Eventually(func(g Gomega) {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(applicationGVK)
			err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubAppName(disabledCluster)}, app)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub Application: %v", err)
			err = hub.Get(ctx, client.ObjectKey{Namespace: disabledCluster, Name: works[disabledCluster]}, &workv1.ManifestWork{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ManifestWork: %v", err)
			err = spoke.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubAppName(disabledCluster)}, app)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Application on the cluster: %v", err)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("cluster out of the placement: all gone", time.Since(start).Round(time.Second).String())
	})

	It("removes the cluster from the report", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			r := appSetReport(ctx, g)
			g.Expect(r.Statuses.ClusterConditions).To(ConsistOf(HaveField("Cluster", stoppedCluster)))
			g.Expect(r.Statuses.Summary.Clusters).To(Equal("1"))
			g.Expect(r.Statuses.Summary.Synced).To(Equal("1"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
}

func appSetDeletedSpecs() {
	It("deletes the report, the hub Applications and the Applications on the clusters", func(ctx SpecContext) {
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(appSetGVK)
		set.SetNamespace(argoNS)
		set.SetName(appSetName)
		Expect(hub.Delete(ctx, set)).To(Succeed())
		start := time.Now()
		spoke := theFleet.Cluster(stoppedCluster).APIServer.Client
		Eventually(func(g Gomega) {
			err := hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: appSetName}, &appsv1alpha1.MulticlusterApplicationSetReport{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the report: %v", err)
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(applicationGVK)
			err = hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubAppName(stoppedCluster)}, app)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub Application: %v", err)
			err = hub.Get(ctx, client.ObjectKey{Namespace: stoppedCluster, Name: works[stoppedCluster]}, &workv1.ManifestWork{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ManifestWork: %v", err)
			err = spoke.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: hubAppName(stoppedCluster)}, app)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Application on the cluster: %v", err)
			list := &appsv1alpha1.ApplicationStatusReportList{}
			g.Expect(hub.List(ctx, list, client.InNamespace(stoppedCluster), client.MatchingLabels{
				apps.LabelReportHubApplication: apps.HubApplicationLabelValue(argoNS, hubAppName(stoppedCluster)),
			})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "the cluster's ApplicationStatusReport")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("ApplicationSet deleted: all gone", time.Since(start).Round(time.Second).String())
	})
}

// appSetReport is the guestbook ApplicationSet's report.
func appSetReport(ctx SpecContext, g Gomega) *appsv1alpha1.MulticlusterApplicationSetReport {
	r := &appsv1alpha1.MulticlusterApplicationSetReport{}
	g.ExpectWithOffset(1, hub.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: appSetName}, r)).To(Succeed())
	return r
}

// clusterEntry is cluster's entry in r.
func clusterEntry(g Gomega, r *appsv1alpha1.MulticlusterApplicationSetReport, cluster string) appsv1alpha1.ClusterCondition {
	for _, c := range r.Statuses.ClusterConditions {
		if c.Cluster == cluster {
			return c
		}
	}
	g.ExpectWithOffset(1, r.Statuses.ClusterConditions).To(ContainElement(HaveField("Cluster", cluster)))
	return appsv1alpha1.ClusterCondition{}
}

// statusReport is the ApplicationStatusReport cluster's agent wrote of the guestbook.
func statusReport(ctx SpecContext, g Gomega, cluster string) *appsv1alpha1.ApplicationStatusReport {
	rep := &appsv1alpha1.ApplicationStatusReport{}
	g.ExpectWithOffset(1, hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: argoNS + "." + hubAppName(cluster)}, rep)).To(Succeed())
	return rep
}
