package aggregation

import (
	"testing"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// hubRenderedApp is a hub-rendered Application of the ApplicationSet "argocd/guestbook":
// an ordinary hub Application whose Argo CD manages the ManifestWork "<name>" in the
// cluster's namespace.
func hubRenderedApp(cluster, name string) *builders.ApplicationBuilder {
	return builders.Application(name).Namespace(appSetNamespace).OwnedBy("guestbook", "appset-uid").
		Destination(argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: cluster}).
		Plugin("ocm-manifestwork").
		Resource(argov1alpha1.ResourceStatus{
			Group: manifestWorkGroup, Version: "v1", Kind: manifestWorkKind, Namespace: cluster, Name: name,
			Status: argov1alpha1.SyncStatusCodeSynced,
		})
}

// renderedWork is a fixture builder for the ManifestWork the plugin rendered for a hub
// Application, as the cache holds it (no manifests).
type renderedWork struct{ w *workv1.ManifestWork }

func newRenderedWork(cluster, hubApp string) *renderedWork {
	return &renderedWork{w: &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: hubApp, Namespace: cluster, Generation: 1,
			Labels: map[string]string{apps.LabelHubRendered: "true"},
			Annotations: map[string]string{
				apps.AnnotationHubApplicationNamespace: appSetNamespace, apps.AnnotationHubApplicationName: hubApp,
			},
		},
	}}
}

// condition sets a work-level condition observed at the work's generation.
func (b *renderedWork) condition(conditionType string, status metav1.ConditionStatus, message string) *renderedWork {
	b.w.Status.Conditions = append(b.w.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: "Test", Message: message, ObservedGeneration: b.w.Generation, LastTransitionTime: t0,
	})
	return b
}

// manifest adds a manifest's status with its Applied and Available conditions; an empty
// status leaves the condition out.
func (b *renderedWork) manifest(group, kind, namespace, name string, applied, available metav1.ConditionStatus, message string) *renderedWork {
	mc := workv1.ManifestCondition{
		ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(len(b.w.Status.ResourceStatus.Manifests)), Group: group, Version: "v1", Kind: kind, Namespace: namespace, Name: name},
	}
	for _, c := range []struct {
		t string
		s metav1.ConditionStatus
	}{{workv1.ManifestApplied, applied}, {workv1.ManifestAvailable, available}} {
		if c.s == "" {
			continue
		}
		msg := "ok"
		if c.s == metav1.ConditionFalse {
			msg = message
		}
		mc.Conditions = append(mc.Conditions, metav1.Condition{Type: c.t, Status: c.s, Reason: "Test", Message: msg, LastTransitionTime: t0})
	}
	b.w.Status.ResourceStatus.Manifests = append(b.w.Status.ResourceStatus.Manifests, mc)
	return b
}

func (b *renderedWork) obj() *workv1.ManifestWork { return b.w.DeepCopy() }

// guestbookManifests adds the guestbook's Service and Deployment, both applied and available.
func (b *renderedWork) guestbookManifests() *renderedWork {
	return b.manifest("", "Service", "guestbook", "guestbook-ui", metav1.ConditionTrue, metav1.ConditionTrue, "").
		manifest("apps", "Deployment", "guestbook", "guestbook-ui", metav1.ConditionTrue, metav1.ConditionTrue, "")
}

var guestbookResources = []appsv1alpha1.ResourceRef{
	{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui"},
	{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
}

func TestBuildHubRendered(t *testing.T) {
	const (
		applyError  = `Failed to apply manifest: namespaces "missing" not found`
		notFound    = "Resource is not available"
		compareFail = "rpc error: plugin ocm-manifestwork: ConfigMap settings (cm.yaml document 1) has no metadata.namespace"
	)
	tests := map[string]struct {
		app  *argov1alpha1.Application
		work *workv1.ManifestWork
		want appsv1alpha1.AppConditions
	}{
		"healthy: sync and health from the hub Application, resources from the work, no agent": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusHealthy, "").
				OperationState(argov1alpha1.OperationState{Phase: synccommon.OperationSucceeded, Message: "successfully synced (all tasks run)", StartedAt: t0}).Build(),
			work: newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionTrue, "Apply manifest work complete").
				condition(workv1.WorkAvailable, metav1.ConditionTrue, "All resources are available").guestbookManifests().obj(),
			want: appsv1alpha1.AppConditions{
				Resources: guestbookResources,
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Healthy", SyncRevision: "r1",
					OperationStatePhase: "Succeeded", OperationStateStartedAt: "2026-11-01T10:00:00Z",
				}},
				Summary: summary(1, 1, 0, 1, 0, 0),
			},
		},
		"progressing: replicas not ready yet is no failure": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusProgressing, "").Build(),
			work: newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionTrue, "").
				condition(workv1.WorkAvailable, metav1.ConditionTrue, "").guestbookManifests().obj(),
			want: appsv1alpha1.AppConditions{
				Resources: guestbookResources,
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Progressing", SyncRevision: "r1",
				}},
				Summary: summary(1, 1, 0, 0, 1, 1),
			},
		},
		"a manifest fails to apply: the work's condition with the manifest's message, the manifest failing": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusDegraded, "").Build(),
			work: newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionFalse, "Failed to apply manifest work").
				condition(workv1.WorkAvailable, metav1.ConditionTrue, "").
				manifest("", "Service", "guestbook", "guestbook-ui", metav1.ConditionTrue, metav1.ConditionTrue, "").
				manifest("apps", "Deployment", "missing", "ui", metav1.ConditionFalse, "", applyError).obj(),
			want: appsv1alpha1.AppConditions{
				Resources: []appsv1alpha1.ResourceRef{
					{APIVersion: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui"},
					{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "missing", Name: "ui"},
				},
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Degraded", SyncRevision: "r1",
					Conditions: []appsv1alpha1.Condition{{
						Type:    appsv1alpha1.ConditionManifestWorkNotApplied,
						Message: "Failed to apply manifest work: Deployment missing/ui: " + applyError,
					}},
					FailingResources: []appsv1alpha1.FailingResource{{
						APIVersion: "apps/v1", Kind: "Deployment", Namespace: "missing", Name: "ui", SyncStatus: "OutOfSync", Message: applyError,
					}},
				}},
				Summary: summary(1, 1, 0, 0, 1, 0),
			},
		},
		// One ranking for both delivery modes (report.AttentionRank): a missing object is
		// broken health and comes before one that is only out of sync.
		"Available False: the missing object first, then the one that failed to apply": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusDegraded, "").Build(),
			work: newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionFalse, "Failed to apply manifest work").
				condition(workv1.WorkAvailable, metav1.ConditionFalse, "1 of 2 resources are not available").
				manifest("", "ConfigMap", "guestbook", "settings", metav1.ConditionTrue, metav1.ConditionFalse, notFound).
				manifest("rbac.authorization.k8s.io", "ClusterRole", "", "reader", metav1.ConditionFalse, metav1.ConditionTrue, "Failed to apply manifest: forbidden").obj(),
			want: appsv1alpha1.AppConditions{
				Resources: []appsv1alpha1.ResourceRef{
					{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
					{APIVersion: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"},
				},
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Degraded", SyncRevision: "r1",
					Conditions: []appsv1alpha1.Condition{
						{Type: appsv1alpha1.ConditionManifestWorkNotApplied, Message: "Failed to apply manifest work: ClusterRole reader: Failed to apply manifest: forbidden"},
						{Type: appsv1alpha1.ConditionManifestWorkNotAvailable, Message: "1 of 2 resources are not available: ConfigMap guestbook/settings: " + notFound},
					},
					FailingResources: []appsv1alpha1.FailingResource{
						{APIVersion: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings", HealthStatus: "Missing", Message: notFound},
						{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader", SyncStatus: "OutOfSync", Message: "Failed to apply manifest: forbidden"},
					},
				}},
				Summary: summary(1, 1, 0, 0, 1, 0),
			},
		},
		"no work status yet: the hub Application's state, nothing else": {
			app:  hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusProgressing, "").Build(),
			work: newRenderedWork("c1", "c1-guestbook").obj(),
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Progressing", SyncRevision: "r1",
				}},
				Summary: summary(1, 1, 0, 0, 1, 1),
			},
		},
		"conditions of an older generation of the work are stale": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r2").Health(health.HealthStatusProgressing, "").Build(),
			work: func() *workv1.ManifestWork {
				w := newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionFalse, "Failed to apply manifest work").obj()
				w.Generation = 2
				return w
			}(),
			want: appsv1alpha1.AppConditions{
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Synced", HealthStatus: "Progressing", SyncRevision: "r2",
				}},
				Summary: summary(1, 1, 0, 0, 1, 1),
			},
		},
		"the hub Application's errors: the plugin failed, the sync failed": {
			app: hubRenderedApp("c1", "c1-guestbook").Sync(argov1alpha1.SyncStatusCodeUnknown, "").Health(health.HealthStatusHealthy, "").
				OperationState(argov1alpha1.OperationState{Phase: synccommon.OperationError, Message: "ComparisonError: plugin failed", StartedAt: t0}).
				Condition(argov1alpha1.ApplicationCondition{Type: "ComparisonError", Message: compareFail}).Condition(argov1alpha1.ApplicationCondition{Type: "SharedResourceWarning", Message: "shared"}).Build(),
			work: newRenderedWork("c1", "c1-guestbook").condition(workv1.WorkApplied, metav1.ConditionTrue, "").guestbookManifests().obj(),
			want: appsv1alpha1.AppConditions{
				Resources: guestbookResources,
				ClusterConditions: []appsv1alpha1.ClusterCondition{{
					Cluster: "c1", App: "argocd/c1-guestbook/c1/c1-guestbook", Delivery: appsv1alpha1.DeliveryHubRendered,
					SyncStatus: "Unknown", HealthStatus: "Healthy",
					OperationStatePhase: "Error", OperationStateStartedAt: "2026-11-01T10:00:00Z",
					Conditions: []appsv1alpha1.Condition{
						{Type: appsv1alpha1.ConditionOperationFailed, Message: "ComparisonError: plugin failed"},
						{Type: "ComparisonError", Message: compareFail},
						{Type: "SharedResourceWarning", Message: "shared"},
					},
				}},
				Summary: summary(1, 0, 1, 1, 0, 0),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := Inputs{ApplicationSet: guestbook, HubRendered: []HubRenderedApplication{{Application: tc.app, Work: tc.work}}}
			if diff := cmp.Diff(tc.want, Build(in, DefaultLimits)); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildBothDeliveryModes(t *testing.T) {
	in := Inputs{
		ApplicationSet: guestbook,
		Works: []workv1.ManifestWork{
			newWork("c1", "c1-guestbook").feedback("Healthy", "Synced", "r1", "Succeeded", "2026-11-01T10:00:00Z").obj(),
			newWork("c3", "c3-guestbook").feedback("Degraded", "OutOfSync", "r1", "", "").obj(),
		},
		Reports: []appsv1alpha1.ApplicationStatusReport{
			newReport("c1", "c1-guestbook").state(appsv1alpha1.HealthStatusHealthy, appsv1alpha1.SyncStatusSynced, "r1").
				resource("apps", "v1", "Deployment", "guestbook", "guestbook-ui", appsv1alpha1.SyncStatusSynced, appsv1alpha1.HealthStatusHealthy, "").obj(),
		},
		Agents: map[string]pullmodel.AgentAvailability{"c1": available(), "c3": available()},
		HubRendered: []HubRenderedApplication{
			{
				Application: hubRenderedApp("c2", "c2-guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusHealthy, "").Build(),
				Work:        newRenderedWork("c2", "c2-guestbook").guestbookManifests().obj(),
			},
			{
				Application: hubRenderedApp("c4", "c4-guestbook").Sync(argov1alpha1.SyncStatusCodeOutOfSync, "r1").Health(health.HealthStatusProgressing, "").Build(),
				Work:        newRenderedWork("c4", "c4-guestbook").obj(),
			},
		},
	}
	got := Build(in, DefaultLimits)
	if diff := cmp.Diff(summary(4, 2, 2, 2, 2, 1), got.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	var modes []string
	for _, e := range got.ClusterConditions {
		modes = append(modes, e.Cluster+"="+string(e.Delivery))
		if (e.Delivery == appsv1alpha1.DeliveryHubRendered) != (e.AgentAvailable == nil) {
			t.Errorf("entry %s: delivery %s with agentAvailable %v", e.Cluster, e.Delivery, e.AgentAvailable)
		}
	}
	if diff := cmp.Diff([]string{"c1=Pull", "c2=HubRendered", "c3=Pull", "c4=HubRendered"}, modes); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guestbookResources, got.Resources); diff != "" {
		t.Errorf("resources, the union of both modes (-want +got):\n%s", diff)
	}
}

func TestBoundTreatsHealthyHubRenderedEntriesAsFine(t *testing.T) {
	fine := appsv1alpha1.ClusterCondition{Cluster: "c1", SyncStatus: "Synced", HealthStatus: "Healthy", Delivery: appsv1alpha1.DeliveryHubRendered}
	if attention(fine) != 0 {
		t.Error("a healthy, synced hub-rendered entry needs attention: it has no agent to be available")
	}
	pulled := appsv1alpha1.ClusterCondition{Cluster: "c2", SyncStatus: "Synced", HealthStatus: "Healthy", Delivery: appsv1alpha1.DeliveryPull, AgentAvailable: ptr.To(true)}
	terse := Bound(appsv1alpha1.AppConditions{ClusterConditions: []appsv1alpha1.ClusterCondition{fine, pulled}},
		Limits{Levels: []Level{{Terse: TerseAll}}})
	if got := terse.ClusterConditions[0].Delivery; got != appsv1alpha1.DeliveryHubRendered {
		t.Errorf("terse hub-rendered entry has delivery %q, want it kept", got)
	}
	if got := terse.ClusterConditions[1]; got.Delivery != "" || got.AgentAvailable != nil {
		t.Errorf("terse pulled entry keeps delivery %q and agentAvailable %v, want both left out (unset means Pull)", got.Delivery, got.AgentAvailable)
	}
}

func TestIsHubRenderedApplication(t *testing.T) {
	pulled := hubRenderedApp("c1", "a").Build()
	pulled.Labels = map[string]string{apps.LabelPullToOCMManagedCluster: "true"}
	badLabel := hubRenderedApp("c1", "a").Build()
	badLabel.Labels = map[string]string{apps.LabelPullToOCMManagedCluster: "yes"}
	notPulled := hubRenderedApp("c1", "a").Build()
	notPulled.Labels = map[string]string{apps.LabelPullToOCMManagedCluster: "false"}
	standalone := hubRenderedApp("c1", "a").Build()
	standalone.OwnerReferences = nil
	noWork := hubRenderedApp("c1", "a").Build()
	noWork.Status.Resources = []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: "c1", Name: "a"}}
	tests := map[string]struct {
		app  *argov1alpha1.Application
		want bool
	}{
		"owned, manages a ManifestWork":    {app: hubRenderedApp("c1", "a").Build(), want: true},
		"pull label false: not pulled":     {app: notPulled, want: true},
		"pulled: propagation delivers it":  {app: pulled},
		"invalid pull label":               {app: badLabel},
		"no ApplicationSet":                {app: standalone},
		"manages no ManifestWork (push)":   {app: noWork},
		"nil (a tombstone without object)": {app: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isHubRenderedApplication(tc.app); got != tc.want {
				t.Errorf("isHubRenderedApplication = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRenderedFor(t *testing.T) {
	app := hubRenderedApp("c1", "guestbook").Build()
	noNamespace := newRenderedWork("c1", "guestbook").obj()
	delete(noNamespace.Annotations, apps.AnnotationHubApplicationNamespace)
	otherNamespace := newRenderedWork("c1", "guestbook").obj()
	otherNamespace.Annotations[apps.AnnotationHubApplicationNamespace] = "team-a"
	unlabelled := newRenderedWork("c1", "guestbook").obj()
	unlabelled.Labels = nil
	tests := map[string]struct {
		work *workv1.ManifestWork
		want bool
	}{
		"its own": {work: newRenderedWork("c1", "guestbook").obj(), want: true},
		"Argo CD's namespace unknown to the plugin":        {work: noNamespace, want: true},
		"another Application's":                            {work: newRenderedWork("c1", "other").obj()},
		"an Application of that name in another namespace": {work: otherNamespace},
		"not hub-rendered":                                 {work: unlabelled},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := renderedFor(tc.work, app); got != tc.want {
				t.Errorf("renderedFor = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHubRenderedWorkChanged(t *testing.T) {
	base := newRenderedWork("c1", "guestbook").condition(workv1.WorkApplied, metav1.ConditionTrue, "").guestbookManifests().obj()
	rewritten := base.DeepCopy()
	rewritten.Status.Conditions[0].LastTransitionTime = t2
	rewritten.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = []workv1.FeedbackValue{
		{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
	}
	failed := base.DeepCopy()
	failed.Status.ResourceStatus.Manifests[1].Conditions[0].Status = metav1.ConditionFalse
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = &t2
	tests := map[string]struct {
		newWork *workv1.ManifestWork
		want    bool
	}{
		"times and feedback rewritten":  {newWork: rewritten},
		"a manifest fails to apply":     {newWork: failed, want: true},
		"deletion starts":               {newWork: deleting, want: true},
		"unchanged (a periodic resync)": {newWork: base.DeepCopy()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := event.TypedUpdateEvent[*workv1.ManifestWork]{ObjectOld: base, ObjectNew: tc.newWork}
			if got := hubRenderedWorkChanged().Update(e); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHubRenderedApplicationChanged(t *testing.T) {
	base := hubRenderedApp("c1", "guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusHealthy, "").Build()
	refreshed := base.DeepCopy()
	refreshed.Status.ReconciledAt = &t2
	degraded := base.DeepCopy()
	degraded.Status.Health.Status = health.HealthStatusDegraded
	pushed := hubRenderedApp("c1", "guestbook").Sync(argov1alpha1.SyncStatusCodeSynced, "r1").Health(health.HealthStatusHealthy, "").Build()
	pushed.Status.Resources = nil
	pushedDegraded := pushed.DeepCopy()
	pushedDegraded.Status.Health.Status = health.HealthStatusDegraded
	tests := map[string]struct {
		oldApp, newApp *argov1alpha1.Application
		want           bool
	}{
		"Argo CD refreshed, nothing the entry reads changed": {oldApp: base, newApp: refreshed},
		"health changed":                          {oldApp: base, newApp: degraded, want: true},
		"stops managing its ManifestWork":         {oldApp: base, newApp: pushed, want: true},
		"an Application that is not hub-rendered": {oldApp: pushed, newApp: pushedDegraded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := event.TypedUpdateEvent[*argov1alpha1.Application]{ObjectOld: tc.oldApp, ObjectNew: tc.newApp}
			if got := hubRenderedApplicationChanged().Update(e); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
}
