package gitopscluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

// outcome is what one reconcile found and did; computeStatus turns it into the status.
type outcome struct {
	// placementReason is empty when the Placement resolved, else a Reason* constant.
	placementReason  string
	placementMessage string
	// argoNamespaceMissing is set when spec.argoServer.argoNamespace does not exist.
	argoNamespaceMissing bool
	argoNamespace        string
	// argoNamespaceNotAllowed is set when argoNamespace is not among
	// allowedArgoNamespaces (Options.ArgoNamespaces): nothing was read or written.
	argoNamespaceNotAllowed bool
	allowedArgoNamespaces   []string

	// clusters are the decided clusters that have a cluster Secret.
	clusters []string
	// conflicts say which clusters could not be registered because a Secret of that name
	// exists that no GitOpsCluster created.
	conflicts []string
	// secretsErr is an API error reading what the cluster Secrets derive from, or
	// writing them.
	secretsErr error
	// generatorErr is an API error writing the ConfigMaps, Role or RoleBinding.
	generatorErr error
	// generatorConflicts name the ConfigMaps, Role or RoleBinding left alone because they
	// exist without LabelManagedBy.
	generatorConflicts []string
	// blankImplied is set when spec.createBlankClusterSecrets is not true.
	blankImplied bool
}

// maxListedClusters bounds how many cluster names the status message lists.
const maxListedClusters = 20

// computeStatus is the status gc should have after a reconcile with outcome o: one
// condition per part, Ready summing them up, phase and message from Ready.
// lastUpdateTime moves to now only when phase or message change.
func computeStatus(gc *appsv1beta1.GitOpsCluster, o outcome, now metav1.Time) appsv1beta1.GitOpsClusterStatus {
	st := *gc.Status.DeepCopy()
	gen := gc.Generation
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now,
		})
	}
	unknown := func(typ string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: metav1.ConditionUnknown, Reason: appsv1beta1.ReasonWaitingForPrerequisites,
			Message: "Waiting for the Placement and the Argo CD namespace to resolve", ObservedGeneration: gen, LastTransitionTime: now,
		})
	}

	// failed collects the False conditions in order: the first one gives Ready its reason.
	type failure struct{ reason, message string }
	var failed []failure

	if o.placementReason != "" {
		set(appsv1beta1.ConditionPlacementResolved, false, o.placementReason, o.placementMessage)
		failed = append(failed, failure{o.placementReason, o.placementMessage})
	} else {
		msg := o.placementMessage
		if msg == "" {
			msg = "The Placement exists"
		}
		set(appsv1beta1.ConditionPlacementResolved, true, appsv1beta1.ReasonPlacementResolved, msg)
	}
	if o.argoNamespaceNotAllowed {
		msg := fmt.Sprintf("Argo CD namespace %q is not one this manager may write to [%s]: name one of those, "+
			"or have the hub administrator add it to the chart value rbac.argoNamespaces",
			o.argoNamespace, strings.Join(o.allowedArgoNamespaces, " "))
		set(appsv1beta1.ConditionArgoNamespaceFound, false, appsv1beta1.ReasonArgoNamespaceNotAllowed, msg)
		failed = append(failed, failure{appsv1beta1.ReasonArgoNamespaceNotAllowed, msg})
	} else if o.argoNamespaceMissing {
		msg := fmt.Sprintf("Argo CD namespace %q does not exist", o.argoNamespace)
		set(appsv1beta1.ConditionArgoNamespaceFound, false, appsv1beta1.ReasonArgoNamespaceNotFound, msg)
		failed = append(failed, failure{appsv1beta1.ReasonArgoNamespaceNotFound, msg})
	} else {
		set(appsv1beta1.ConditionArgoNamespaceFound, true, appsv1beta1.ReasonArgoNamespaceFound,
			fmt.Sprintf("Argo CD namespace %q exists", o.argoNamespace))
	}

	if len(failed) > 0 {
		unknown(appsv1beta1.ConditionClusterSecretsSynced)
		unknown(appsv1beta1.ConditionGeneratorConfigured)
	} else {
		if o.secretsErr == nil {
			st.ClusterCount = int32(len(o.clusters))
		}
		switch {
		case o.secretsErr != nil:
			msg := fmt.Sprintf("Syncing cluster Secrets failed: %v", o.secretsErr)
			set(appsv1beta1.ConditionClusterSecretsSynced, false, appsv1beta1.ReasonClusterSecretsFailed, msg)
			failed = append(failed, failure{appsv1beta1.ReasonClusterSecretsFailed, msg})
		case len(o.conflicts) > 0:
			msg := "Not registered, a Secret of the same name that no GitOpsCluster created exists: " + strings.Join(o.conflicts, "; ")
			set(appsv1beta1.ConditionClusterSecretsSynced, false, appsv1beta1.ReasonClusterSecretConflict, msg)
			failed = append(failed, failure{appsv1beta1.ReasonClusterSecretConflict, msg})
		case o.blankImplied:
			set(appsv1beta1.ConditionClusterSecretsSynced, true, appsv1beta1.ReasonBlankClusterSecretsImplied,
				fmt.Sprintf("%d cluster Secrets; spec.createBlankClusterSecrets is not true, but the pull model keeps no cluster credentials on the hub, so they are blank", len(o.clusters)))
		default:
			set(appsv1beta1.ConditionClusterSecretsSynced, true, appsv1beta1.ReasonClusterSecretsSynced,
				fmt.Sprintf("%d cluster Secrets", len(o.clusters)))
		}
		switch {
		case o.generatorErr != nil:
			msg := fmt.Sprintf("Writing the placement generator configuration failed: %v", o.generatorErr)
			set(appsv1beta1.ConditionGeneratorConfigured, false, appsv1beta1.ReasonGeneratorConfigFailed, msg)
			failed = append(failed, failure{appsv1beta1.ReasonGeneratorConfigFailed, msg})
		case len(o.generatorConflicts) > 0:
			msg := "Left alone, they exist without the label " + apps.LabelManagedBy + "=" + apps.ManagedByValue +
				" (not written by a GitOpsCluster): " + strings.Join(o.generatorConflicts, "; ") +
				"; delete them, or add the label to let GitOpsClusters manage them"
			set(appsv1beta1.ConditionGeneratorConfigured, false, appsv1beta1.ReasonGeneratorConfigConflict, msg)
			failed = append(failed, failure{appsv1beta1.ReasonGeneratorConfigConflict, msg})
		default:
			set(appsv1beta1.ConditionGeneratorConfigured, true, appsv1beta1.ReasonGeneratorConfigured,
				fmt.Sprintf("ConfigMaps %s and %s, Role and RoleBinding %s in %s", ConfigMapOCMPlacementGenerator,
					ConfigMapACMPlacement, RoleName(o.argoNamespace), o.argoNamespace))
		}
	}

	phase, message := appsv1beta1.PhaseSuccessful, successMessage(o)
	if len(failed) > 0 {
		phase, message = appsv1beta1.PhaseFailed, failed[0].message
		set(appsv1beta1.ConditionReady, false, failed[0].reason, message)
	} else {
		set(appsv1beta1.ConditionReady, true, appsv1beta1.ReasonReady, message)
	}
	if phase != st.Phase || message != st.Message || st.LastUpdateTime.IsZero() {
		st.Phase, st.Message, st.LastUpdateTime = phase, message, now
	}
	return st
}

func successMessage(o outcome) string {
	names := o.clusters
	more := ""
	if len(names) > maxListedClusters {
		more = fmt.Sprintf(" and %d more", len(names)-maxListedClusters)
		names = names[:maxListedClusters]
	}
	return fmt.Sprintf("Added %d managed clusters [%s%s] to Argo CD namespace %s",
		len(o.clusters), strings.Join(names, " "), more, o.argoNamespace)
}

// readyReason is the reason of gc's Ready condition, empty when it has none.
func readyReason(st *appsv1beta1.GitOpsClusterStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, appsv1beta1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}
