package aggregation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/report"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Hub-rendered delivery (docs/cmp.md): an ApplicationSet generates ordinary hub
// Applications whose source is rendered by the ocm-manifestwork Config Management Plugin
// into one ManifestWork, which the hub's Argo CD applies into the cluster's namespace and
// OCM's work agent applies on the cluster. No Argo CD and no argocd-pull agent run there.
// The hub's Argo CD computes the Application's sync and health (health from the
// ManifestWork health check); what happened to each object on the cluster is only in the
// ManifestWork's status.

// HubRenderedApplication is a hub-rendered Application with the ManifestWork its Argo CD
// applied to one cluster.
type HubRenderedApplication struct {
	// Application is the hub Application, owned by the ApplicationSet.
	Application *argov1alpha1.Application
	// Work is the ManifestWork the Config Management Plugin rendered for it, in the
	// target cluster's namespace. Its manifests are not cached (see trimHubRenderedWork):
	// the resources come from its status.
	Work *workv1.ManifestWork
}

// manifestWorkGroupKind is how a ManifestWork appears in an Application's status.resources.
const (
	manifestWorkGroup = "work.open-cluster-management.io"
	manifestWorkKind  = "ManifestWork"
)

// isHubRenderedApplication tells whether app may deliver an ApplicationSet's Application
// through hub-rendered ManifestWorks: it is not pulled (the propagation controller
// delivers those, and their status is the spoke's), an ApplicationSet owns it, and its Argo
// CD manages at least one ManifestWork. Whether such a ManifestWork is hub-rendered is the
// ManifestWork's label; the Application alone cannot tell (a plugin found by discovery
// leaves no trace in its spec).
func isHubRenderedApplication(app *argov1alpha1.Application) bool {
	if app == nil {
		return false
	}
	if pulled, err := pullmodel.Marked(app); err != nil || pulled {
		// An invalid label is left to the propagation controller, which reports it.
		return false
	}
	return len(pullmodel.OwningApplicationSets(app)) > 0 && len(managedWorks(app)) > 0
}

// managedWorks are the ManifestWorks app's Argo CD manages, from status.resources. Argo CD
// lists a resource there from its first comparison on, before it creates it, so an
// Application names its ManifestWork by the time the ManifestWork exists.
func managedWorks(app *argov1alpha1.Application) []types.NamespacedName {
	var out []types.NamespacedName
	for _, r := range app.Status.Resources {
		if r.Group == manifestWorkGroup && r.Kind == manifestWorkKind && r.Namespace != "" && r.Name != "" {
			out = append(out, types.NamespacedName{Namespace: r.Namespace, Name: r.Name})
		}
	}
	return out
}

// renderedFor tells whether mw was rendered for app: the plugin names the hub Application
// on the ManifestWork. The namespace annotation is absent when the plugin did not know Argo
// CD's namespace (docs/cmp.md, ARGOCD_NAMESPACE); the name then has to do.
func renderedFor(mw *workv1.ManifestWork, app *argov1alpha1.Application) bool {
	ns, name := mw.Annotations[apps.AnnotationHubApplicationNamespace], mw.Annotations[apps.AnnotationHubApplicationName]
	return mw.Labels[apps.LabelHubRendered] == "true" && name == app.Name && (ns == "" || ns == app.Namespace)
}

// hubRenderedEntry is the entry of a hub-rendered Application on its cluster, and the
// resources its ManifestWork applied there. Sync, health, revision and operation are the
// hub Application's: the hub's Argo CD computed them, its health from the ManifestWork's
// conditions. Conditions are the failed operation, the ManifestWork's failures and the
// Application's own; failing resources are the manifests the work agent could not apply
// or does not find on the cluster. There is no agent, so agentAvailable stays unset.
func hubRenderedEntry(appSetNamespace string, in HubRenderedApplication) (appsv1alpha1.ClusterCondition, []appsv1alpha1.ResourceRef) {
	app, mw := in.Application, in.Work
	st := &app.Status
	entry := appsv1alpha1.ClusterCondition{
		Cluster:       mw.Namespace,
		App:           fmt.Sprintf("%s/%s/%s/%s", appSetNamespace, app.Name, mw.Namespace, mw.Name),
		SyncStatus:    string(st.Sync.Status),
		HealthStatus:  string(st.Health.Status),
		SyncRevision:  st.Sync.Revision,
		SyncRevisions: slices.Clone(st.Sync.Revisions),
		Delivery:      appsv1alpha1.DeliveryHubRendered,
	}
	if entry.SyncRevision == "" && len(st.Sync.Revisions) > 0 {
		// A multi-source Application has one revision per source; the first identifies it.
		entry.SyncRevision = st.Sync.Revisions[0]
	}
	if op := st.OperationState; op != nil {
		entry.OperationStatePhase = string(op.Phase)
		if !op.StartedAt.IsZero() {
			entry.OperationStateStartedAt = op.StartedAt.UTC().Format(time.RFC3339)
		}
	}
	entry.Conditions = hubRenderedConditions(st, mw)
	entry.FailingResources = manifestFailures(mw)
	return entry, manifestResources(mw)
}

// hubRenderedConditions are the failed operation's message, the ManifestWork's Applied and
// Available failures and the Application's conditions, errors first.
func hubRenderedConditions(st *argov1alpha1.ApplicationStatus, mw *workv1.ManifestWork) []appsv1alpha1.Condition {
	var out []appsv1alpha1.Condition
	if op := st.OperationState; op != nil {
		if c, ok := report.FailedOperation(appsv1alpha1.OperationPhase(op.Phase), op.Message); ok {
			out = append(out, c)
		}
	}
	out = append(out, workConditions(mw)...)
	for _, c := range st.Conditions {
		out = append(out, appsv1alpha1.Condition{Type: c.Type, Message: c.Message})
	}
	report.SortConditions(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// workConditions turn the ManifestWork's Applied and Available conditions, when False for
// its current generation, into the entry's conditions. The message is the work's followed
// by each failing manifest's own, as the ManifestWork health check writes it: the work
// agent's work-level message alone ("Failed to apply manifest work") names no object.
func workConditions(mw *workv1.ManifestWork) []appsv1alpha1.Condition {
	var out []appsv1alpha1.Condition
	for _, c := range []struct{ workType, manifestType, entryType string }{
		{workv1.WorkApplied, workv1.ManifestApplied, appsv1alpha1.ConditionManifestWorkNotApplied},
		{workv1.WorkAvailable, workv1.ManifestAvailable, appsv1alpha1.ConditionManifestWorkNotAvailable},
	} {
		cond := meta.FindStatusCondition(mw.Status.Conditions, c.workType)
		// A condition of an older generation is about manifests the work no longer holds:
		// the hub Application shows Progressing until the work agent catches up.
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.ObservedGeneration < mw.Generation {
			continue
		}
		parts := []string{}
		if cond.Message != "" {
			parts = append(parts, cond.Message)
		}
		for _, m := range mw.Status.ResourceStatus.Manifests {
			mc := meta.FindStatusCondition(m.Conditions, c.manifestType)
			if mc != nil && mc.Status == metav1.ConditionFalse {
				parts = append(parts, fmt.Sprintf("%s %s: %s", m.ResourceMeta.Kind, objectName(m.ResourceMeta), mc.Message))
			}
		}
		out = append(out, appsv1alpha1.Condition{Type: c.entryType, Message: strings.Join(parts, ": ")})
	}
	return out
}

// manifestFailures are the manifests whose Applied or Available condition is False, most
// severe first (report.AttentionRank: missing objects before ones only out of sync), in
// the work's order otherwise. Not applied means not in sync with what the hub rendered
// (OutOfSync, with the apply error); not available means the object does not exist on the
// cluster (Missing). Replicas not yet ready are progress, not failure; the Application's
// health shows them.
func manifestFailures(mw *workv1.ManifestWork) []appsv1alpha1.FailingResource {
	var out []appsv1alpha1.FailingResource
	for _, m := range mw.Status.ResourceStatus.Manifests {
		applied := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied)
		available := meta.FindStatusCondition(m.Conditions, workv1.ManifestAvailable)
		failedApply := applied != nil && applied.Status == metav1.ConditionFalse
		missing := available != nil && available.Status == metav1.ConditionFalse
		if !failedApply && !missing {
			continue
		}
		rm := m.ResourceMeta
		fr := appsv1alpha1.FailingResource{APIVersion: report.APIVersion(rm.Group, rm.Version), Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name}
		if missing {
			fr.HealthStatus, fr.Message = string(appsv1alpha1.HealthStatusMissing), available.Message
		}
		if failedApply {
			// The apply error says why it is missing too.
			fr.SyncStatus, fr.Message = string(appsv1alpha1.SyncStatusOutOfSync), applied.Message
		}
		out = append(out, fr)
	}
	report.SortFailing(out)
	return out
}

// manifestResources are the objects the work agent reports for the ManifestWork. Before
// its first status there are none: the cache does not keep the manifests themselves.
func manifestResources(mw *workv1.ManifestWork) []appsv1alpha1.ResourceRef {
	var out []appsv1alpha1.ResourceRef
	for _, m := range mw.Status.ResourceStatus.Manifests {
		rm := m.ResourceMeta
		if rm.Kind == "" || rm.Name == "" {
			continue
		}
		out = append(out, appsv1alpha1.ResourceRef{APIVersion: report.APIVersion(rm.Group, rm.Version), Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name})
	}
	return out
}

// objectName is "namespace/name", or "name" for a cluster-scoped object.
func objectName(rm workv1.ManifestResourceMeta) string {
	if rm.Namespace == "" {
		return rm.Name
	}
	return rm.Namespace + "/" + rm.Name
}

// hubRenderedWorkState is what an entry reads from a hub-rendered ManifestWork (exported
// fields: equality.Semantic compares times through their methods). The work
// agent rewrites the status for much more (transition times, status feedback of every
// Deployment's replicas); only a change of this reaches the controller.
type hubRenderedWorkState struct {
	Deleting    bool
	Label       string
	Application string
	Conditions  []appsv1alpha1.Condition
	Failing     []appsv1alpha1.FailingResource
	Resources   []appsv1alpha1.ResourceRef
}

func workStateOf(mw *workv1.ManifestWork) hubRenderedWorkState {
	return hubRenderedWorkState{
		Deleting:    !mw.DeletionTimestamp.IsZero(),
		Label:       mw.Labels[apps.LabelHubRendered],
		Application: mw.Annotations[apps.AnnotationHubApplicationNamespace] + "/" + mw.Annotations[apps.AnnotationHubApplicationName],
		Conditions:  workConditions(mw),
		Failing:     manifestFailures(mw),
		Resources:   manifestResources(mw),
	}
}

// hubRenderedApplicationState is what an entry, the indexes and the mapping read from a
// hub Application (exported fields, as above). Argo CD rewrites the status far more often (reconciledAt, the
// resources' health, the comparison details).
type hubRenderedApplicationState struct {
	Candidate  bool
	Deleting   bool
	Owners     []types.NamespacedName
	Works      []types.NamespacedName
	Sync       argov1alpha1.SyncStatusCode
	Revision   string
	Revisions  []string
	Health     string
	Operation  *argov1alpha1.OperationState
	Conditions []appsv1alpha1.Condition
}

func applicationStateOf(app *argov1alpha1.Application) hubRenderedApplicationState {
	st := &app.Status
	out := hubRenderedApplicationState{
		Candidate: isHubRenderedApplication(app),
		Deleting:  !app.DeletionTimestamp.IsZero(),
		Owners:    pullmodel.OwningApplicationSets(app),
		Works:     managedWorks(app),
		Sync:      st.Sync.Status,
		Revision:  st.Sync.Revision,
		Revisions: st.Sync.Revisions,
		Health:    string(st.Health.Status),
	}
	if op := st.OperationState; op != nil {
		out.Operation = &argov1alpha1.OperationState{Phase: op.Phase, Message: op.Message, StartedAt: op.StartedAt}
	}
	for _, c := range st.Conditions {
		out.Conditions = append(out.Conditions, appsv1alpha1.Condition{Type: c.Type, Message: c.Message})
	}
	return out
}
