package pullmodel

import (
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hub Application's status.conditions hold two kinds of condition: those of the spoke's
// Argo CD, mirrored from the agent's report by the appstatus controller, and those the
// hub's pull-model controllers set themselves to say why the Application does not run
// (bad input, a ManifestWork the hub refused or the cluster did not apply, no report).
// Argo CD conditions have no owner field, so a hub condition is one whose message starts
// with HubConditionPrefix: `argocd app get` and the UI show it as is, and each writer
// replaces only its own conditions (SetHubConditions, SetSpokeConditions), so the
// writers never undo each other.

// HubConditionPrefix starts the message of every condition the hub's controllers set.
const HubConditionPrefix = "argocd-pull: "

// Types of the hub conditions, each with exactly one writer.
const (
	// ConditionInvalidSpec (propagation): the Application is not delivered as it is now:
	// bad pull label or annotations, a target cluster that does not exist, is being
	// deleted or is the hub. Argo CD's own type, which `argocd app get` and the UI show.
	ConditionInvalidSpec = argov1alpha1.ApplicationConditionInvalidSpecError
	// ConditionDeliveryError (propagation): the hub refused the ManifestWork (too large,
	// cluster namespace terminating, admission webhook).
	ConditionDeliveryError argov1alpha1.ApplicationConditionType = "DeliveryError"
	// ConditionClusterApplyError (appstatus): the ManifestWork is on the hub but the
	// cluster's work agent did not apply it or it is not available there.
	ConditionClusterApplyError argov1alpha1.ApplicationConditionType = "ClusterApplyError"
	// ConditionNotReported (appstatus): delivered and applied, but the cluster's agent,
	// available, has not reported the Application after a grace period.
	ConditionNotReported argov1alpha1.ApplicationConditionType = "NotReportedError"
	// ConditionStaleStatus (appstatus): the cluster's argocd-pull agent is unavailable, so
	// the status and resource tree shown are its last report's. A warning (Argo CD shows
	// types ending in Warning as warnings): nothing is wrong with the Application itself.
	ConditionStaleStatus argov1alpha1.ApplicationConditionType = "StaleStatusWarning"
)

// Hub condition types by writer.
var (
	PropagationConditionTypes = []argov1alpha1.ApplicationConditionType{ConditionInvalidSpec, ConditionDeliveryError}
	AppStatusConditionTypes   = []argov1alpha1.ApplicationConditionType{ConditionClusterApplyError, ConditionNotReported, ConditionStaleStatus}
)

// HubCondition is a hub condition of type t saying msg.
func HubCondition(t argov1alpha1.ApplicationConditionType, msg string) argov1alpha1.ApplicationCondition {
	return argov1alpha1.ApplicationCondition{Type: t, Message: HubConditionPrefix + msg}
}

// IsHubCondition tells whether c was set by a hub controller.
func IsHubCondition(c argov1alpha1.ApplicationCondition) bool {
	return strings.HasPrefix(c.Message, HubConditionPrefix)
}

// HubConditions are the hub conditions among conditions.
func HubConditions(conditions []argov1alpha1.ApplicationCondition) []argov1alpha1.ApplicationCondition {
	var out []argov1alpha1.ApplicationCondition
	for _, c := range conditions {
		if IsHubCondition(c) {
			out = append(out, c)
		}
	}
	return out
}

// SetHubConditions returns conditions with the hub conditions of the given types replaced
// by want (each made with HubCondition), and whether that changed anything. Every other
// condition is kept in place. A wanted condition equal in type and message to one already
// there keeps its LastTransitionTime; a new one gets now.
func SetHubConditions(conditions []argov1alpha1.ApplicationCondition, types []argov1alpha1.ApplicationConditionType,
	want []argov1alpha1.ApplicationCondition, now metav1.Time) ([]argov1alpha1.ApplicationCondition, bool) {
	owned := func(c argov1alpha1.ApplicationCondition) bool {
		return IsHubCondition(c) && slices.Contains(types, c.Type)
	}
	var kept, old []argov1alpha1.ApplicationCondition
	for _, c := range conditions {
		if owned(c) {
			old = append(old, c)
		} else {
			kept = append(kept, c)
		}
	}
	next := make([]argov1alpha1.ApplicationCondition, 0, len(want))
	for _, w := range want {
		c := w
		c.LastTransitionTime = nil
		if i := slices.IndexFunc(old, func(o argov1alpha1.ApplicationCondition) bool {
			return o.Type == w.Type && o.Message == w.Message
		}); i >= 0 {
			c.LastTransitionTime = old[i].LastTransitionTime
		}
		if c.LastTransitionTime == nil {
			t := now
			c.LastTransitionTime = &t
		}
		next = append(next, c)
	}
	if sameConditions(old, next) {
		return conditions, false
	}
	return append(kept, next...), true
}

// SetSpokeConditions returns conditions with every condition that is not a hub condition
// replaced by spoke (the spoke Argo CD's, in its order), hub conditions kept after them,
// and whether that changed anything.
func SetSpokeConditions(conditions, spoke []argov1alpha1.ApplicationCondition) ([]argov1alpha1.ApplicationCondition, bool) {
	var oldSpoke, hub []argov1alpha1.ApplicationCondition
	for _, c := range conditions {
		if IsHubCondition(c) {
			hub = append(hub, c)
		} else {
			oldSpoke = append(oldSpoke, c)
		}
	}
	if sameConditions(oldSpoke, spoke) {
		return conditions, false
	}
	out := make([]argov1alpha1.ApplicationCondition, 0, len(spoke)+len(hub))
	out = append(out, spoke...)
	out = append(out, hub...)
	if len(out) == 0 {
		out = nil
	}
	return out, true
}

// sameConditions compares type, message and transition time (whole seconds, as stored).
func sameConditions(a, b []argov1alpha1.ApplicationCondition) bool {
	return slices.EqualFunc(a, b, func(x, y argov1alpha1.ApplicationCondition) bool {
		if x.Type != y.Type || x.Message != y.Message {
			return false
		}
		if (x.LastTransitionTime == nil) != (y.LastTransitionTime == nil) {
			return false
		}
		return x.LastTransitionTime == nil || x.LastTransitionTime.Time.Unix() == y.LastTransitionTime.Time.Unix()
	})
}
