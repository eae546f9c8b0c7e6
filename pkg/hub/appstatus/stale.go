package appstatus

import (
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// staleCondition is the StaleStatusWarning the hub Application gets while its cluster's
// argocd-pull agent is unavailable (the cluster is cut off, or the agent is down): what
// the hub shows of the Application, its status here and its resource tree in the hub's
// Argo CD, is the agent's last word, and a user must not read it as today's. It names
// times, not ages, so that it is written once when the agent goes and once when it
// returns, not on a timer. A cluster without the addon has no agent to go stale (its
// status comes from the work agent's feedback) and gets none.
func staleCondition(cluster string, agent pullmodel.AgentAvailability, report *appsv1alpha1.ApplicationReportStatus) (argov1alpha1.ApplicationCondition, bool) {
	if agent.Available || agent.Since == nil {
		return argov1alpha1.ApplicationCondition{}, false
	}
	last := "there is no report of the Application from it yet"
	if report != nil {
		last = fmt.Sprintf("the status and resource tree shown are from its last report, of %s",
			report.ObservedAt.UTC().Format(time.RFC3339))
	}
	return pullmodel.HubCondition(pullmodel.ConditionStaleStatus, fmt.Sprintf(
		"cluster %s's argocd-pull agent is unavailable since %s (%s): %s. The hub shows the cluster's own state again once the agent reports.",
		cluster, agent.Since.UTC().Format(time.RFC3339), agent.Reason, last)), true
}
