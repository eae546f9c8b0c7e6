package appstatus

import (
	"fmt"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Before the spoke says anything about an Application, two things can keep it from
// running, and neither shows in feedback or a report, which then simply never come. This
// controller says so on the hub Application with the hub conditions it owns
// (pullmodel.AppStatusConditionTypes):
//
//   - ClusterApplyError: OCM's work agent did not apply the ManifestWork on the cluster
//     (the Application's namespace does not exist there, admission refused it, Argo CD's
//     CRD is missing) or the applied Application is not there. The work agent's own
//     message names the cause.
//   - NotReportedError: the work is applied and the cluster's argocd-pull agent is
//     available, yet after a grace period it has not reported the Application: the agent
//     (and usually the cluster's Argo CD) does not watch the namespace it was delivered
//     to. The message says where it went and quotes what the agent says it watches.
//
// The grace period starts when the work became Applied or the agent became available,
// whichever is later, so an agent that just started gets the whole period. It is waited
// out by requeueing that one Application, never by scanning.

// DefaultReportGracePeriod is how long an applied Application may go without a report
// from an available agent before it is NotReportedError. The agent reports within
// seconds of seeing an Application; a minute leaves room for a slow cluster.
const DefaultReportGracePeriod = 60 * time.Second

// delivery is what the delivery conditions of an Application are computed from.
type delivery struct {
	cluster string
	// work is the Application's current ManifestWork; nil when there is none.
	work *workv1.ManifestWork
	// reported is whether the cluster's agent has a report of the Application.
	reported bool
	agent    pullmodel.AgentAvailability
	// watched is the agent's ApplicationsWatched condition on its ManagedClusterAddOn;
	// nil when it has none.
	watched *metav1.Condition
}

// deliveryConditions are the hub conditions d calls for (at most one), and, while an
// applied Application waits within the grace period for its first report, how long until
// the period ends (0 otherwise): the caller checks again then.
func deliveryConditions(d delivery, grace time.Duration, now time.Time) ([]argov1alpha1.ApplicationCondition, time.Duration) {
	if d.work == nil {
		return nil, 0
	}
	if msg, failed := clusterApplyError(d.cluster, d.work); failed {
		return []argov1alpha1.ApplicationCondition{pullmodel.HubCondition(pullmodel.ConditionClusterApplyError, msg)}, 0
	}
	applied := meta.FindStatusCondition(d.work.Status.Conditions, workv1.WorkApplied)
	if d.reported || !d.agent.Available || applied == nil || applied.Status != metav1.ConditionTrue {
		return nil, 0
	}
	since := applied.LastTransitionTime.Time
	if d.agent.Since != nil && d.agent.Since.After(since) {
		since = d.agent.Since.Time
	}
	if wait := since.Add(grace).Sub(now); wait > 0 {
		return nil, wait
	}
	return []argov1alpha1.ApplicationCondition{
		pullmodel.HubCondition(pullmodel.ConditionNotReported, notReportedMessage(d, grace)),
	}, 0
}

// clusterApplyError says why the work agent did not apply mw on cluster, or why the
// applied Application is not there, and whether either is the case. A manifest's own
// condition names the cause; the work's condition ("Failed to apply manifest work")
// stands in only when there is none. Conditions of an older generation count too: the
// last thing the work agent said is still the best there is until it says more.
func clusterApplyError(cluster string, mw *workv1.ManifestWork) (string, bool) {
	manifest := pullmodel.ApplicationManifestConditions(mw)
	if msg, failed := falseCondition(manifest, mw.Status.Conditions, workv1.ManifestApplied, workv1.WorkApplied); failed {
		return fmt.Sprintf("ManifestWork %s/%s is not applied on cluster %s: %s. OCM's work agent retries by itself and applies it once the cause is fixed.",
			mw.Namespace, mw.Name, cluster, msg), true
	}
	if msg, failed := falseCondition(manifest, mw.Status.Conditions, workv1.ManifestAvailable, workv1.WorkAvailable); failed {
		return fmt.Sprintf("the Application %s is not available on cluster %s (ManifestWork %s/%s): %s",
			deliveredName(mw), cluster, mw.Namespace, mw.Name, msg), true
	}
	return "", false
}

// falseCondition is the message of the manifest's condition of type manifestType when it
// is False, else of the work's condition of type workType when that is False.
func falseCondition(manifest, work []metav1.Condition, manifestType, workType string) (string, bool) {
	if c := meta.FindStatusCondition(manifest, manifestType); c != nil && c.Status == metav1.ConditionFalse {
		return orReason(c), true
	}
	if c := meta.FindStatusCondition(work, workType); c != nil && c.Status == metav1.ConditionFalse {
		return orReason(c), true
	}
	return "", false
}

func orReason(c *metav1.Condition) string {
	if c.Message != "" {
		return c.Message
	}
	return c.Reason
}

// notReportedMessage says where the Application went, that the agent has not reported it,
// what the agent says it watches, and what the user can do.
func notReportedMessage(d delivery, grace time.Duration) string {
	where := deliveredName(d.work)
	ns := "its namespace"
	if app, ok := pullmodel.DeliveredApplication(d.work); ok && app.Namespace != "" {
		ns = "namespace " + app.Namespace
	}
	watched := "its ManagedClusterAddOn has no " + apps.ConditionApplicationsWatched + " condition"
	if d.watched != nil {
		watched = fmt.Sprintf("its %s condition is %s: %q", apps.ConditionApplicationsWatched, d.watched.Status, d.watched.Message)
	}
	return fmt.Sprintf("the Application was delivered to cluster %s as %s (ManifestWork %s/%s, applied), but the cluster's argocd-pull agent, "+
		"which is available, has not reported it within %s. The agent reports only Applications in the namespaces it watches; %s. "+
		"Add %s to the addon's watched namespaces (customizedVariable watchNamespaces of its AddOnDeploymentConfig) and let the cluster's Argo CD manage Applications there, "+
		"or deliver the Application to a watched namespace (annotation %s).",
		d.cluster, where, d.work.Namespace, d.work.Name, grace, watched, ns, apps.AnnotationOCMManagedClusterAppNamespace)
}

// deliveredName is "namespace/name" of the Application on its cluster, as mw delivers it.
func deliveredName(mw *workv1.ManifestWork) string {
	app, ok := pullmodel.DeliveredApplication(mw)
	if !ok {
		return "(unknown)"
	}
	return app.String()
}
