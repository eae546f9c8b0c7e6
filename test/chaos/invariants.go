//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/propagation"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/tenancy"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

// The invariants, checked after every quiet period and at the end, each counted by name:
//
//   - works: exactly one ManifestWork per live, valid, marked hub Application, in its
//     cluster's namespace and with its name; none for anything else (orphans), except
//     that a broken Application keeps the one it had (the bad-input rule).
//   - clusters: on each cluster exactly the pulled Applications that should be there,
//     with the hub's source, synced to its revision, the guestbook at that revision.
//   - reports: every ApplicationStatusReport and MulticlusterApplicationSetReport entry
//     matches a live Application on a live cluster and says what runs there; every live
//     Application has its report and entry; every addon is available.
//   - status: the hub Application says what the cluster's says (sync, revision, health);
//     a broken one says why it is not delivered, with a Warning Event.
//   - kept: no Application that was never deleted, unmarked, retargeted or taken out of
//     its Placement lost its objects on the cluster (same UIDs all along).
var invariantNames = []string{"works", "clusters", "reports", "status", "kept"}

// violation is one broken invariant, naming the objects involved.
type violation struct {
	invariant string
	text      string
}

func (v violation) String() string { return v.invariant + ": " + v.text }

// observation is what a delivery epoch showed on its cluster the first time it ran there.
type observation struct {
	spokeUID     types.UID
	guestbookUID types.UID
}

// fleetState is one read of everything the invariants compare.
type fleetState struct {
	hubApps map[string]*unstructured.Unstructured
	// works by hub Application name.
	works map[string][]workv1.ManifestWork
	// spokeApps[cluster][name]: pulled Applications on the clusters.
	spokeApps map[string]map[string]*unstructured.Unstructured
	// statusReports[cluster][hub Application name].
	statusReports map[string]map[string][]appsv1alpha1.ApplicationStatusReport
	setReports    map[string]*appsv1alpha1.MulticlusterApplicationSetReport
	addons        map[string]*addonv1alpha1.ManagedClusterAddOn
	events        []corev1.Event
}

func (h *harness) readState(ctx context.Context) (*fleetState, error) {
	s := &fleetState{
		hubApps: map[string]*unstructured.Unstructured{}, works: map[string][]workv1.ManifestWork{},
		spokeApps: map[string]map[string]*unstructured.Unstructured{}, statusReports: map[string]map[string][]appsv1alpha1.ApplicationStatusReport{},
		setReports: map[string]*appsv1alpha1.MulticlusterApplicationSetReport{}, addons: map[string]*addonv1alpha1.ManagedClusterAddOn{},
	}
	hubApps := &unstructured.UnstructuredList{}
	hubApps.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
	if err := h.hub.List(ctx, hubApps, client.InNamespace(argoNS)); err != nil {
		return nil, err
	}
	for i := range hubApps.Items {
		s.hubApps[hubApps.Items[i].GetName()] = &hubApps.Items[i]
	}
	works := &workv1.ManifestWorkList{}
	if err := h.hub.List(ctx, works); err != nil {
		return nil, err
	}
	for _, w := range works.Items {
		if key, ok := pullmodel.HubApplication(&w); ok && key.Namespace == argoNS {
			s.works[key.Name] = append(s.works[key.Name], w)
		}
	}
	for _, c := range h.m.clusters {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
		if err := h.spokes[c].List(ctx, list, client.InNamespace(argoNS)); err != nil {
			return nil, fmt.Errorf("listing the Applications on %s: %w", c, err)
		}
		s.spokeApps[c] = map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			if list.Items[i].GetAnnotations()[apps.AnnotationHubApplicationName] != "" {
				s.spokeApps[c][list.Items[i].GetName()] = &list.Items[i]
			}
		}
		s.statusReports[c] = map[string][]appsv1alpha1.ApplicationStatusReport{}
		reports := &appsv1alpha1.ApplicationStatusReportList{}
		if err := h.hub.List(ctx, reports, client.InNamespace(c)); err != nil {
			return nil, err
		}
		for _, r := range reports.Items {
			s.statusReports[c][r.Source.HubApplicationName] = append(s.statusReports[c][r.Source.HubApplicationName], r)
		}
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		if err := h.hub.Get(ctx, client.ObjectKey{Namespace: c, Name: fleet.PullAddonName}, mca); client.IgnoreNotFound(err) != nil {
			return nil, err
		} else if err == nil {
			s.addons[c] = mca
		}
	}
	setReports := &appsv1alpha1.MulticlusterApplicationSetReportList{}
	if err := h.hub.List(ctx, setReports, client.InNamespace(argoNS)); err != nil {
		return nil, err
	}
	for i := range setReports.Items {
		s.setReports[setReports.Items[i].Name] = &setReports.Items[i]
	}
	events := &corev1.EventList{}
	if err := h.hub.List(ctx, events, client.InNamespace(argoNS)); err != nil {
		return nil, err
	}
	s.events = events.Items
	return s, nil
}

// check reads the fleet and returns every violated invariant. It also records what each
// delivery epoch first showed on its cluster, which later checks must see again.
func (h *harness) check(ctx context.Context) ([]violation, error) {
	s, err := h.readState(ctx)
	if err != nil {
		return nil, err
	}
	var out []violation
	bad := func(invariant, format string, args ...any) {
		out = append(out, violation{invariant, fmt.Sprintf(format, args...)})
	}
	expected := h.m.expected()
	wantOn := map[string]map[string]expectedApp{}
	for _, c := range h.m.clusters {
		wantOn[c] = map[string]expectedApp{}
	}
	wantHub := map[string]bool{}
	for _, e := range expected {
		wantOn[e.cluster][e.hubName] = e
		wantHub[e.hubName] = true
		h.checkExpected(ctx, s, e, bad)
	}
	// Unmarked standalone Applications stay on the hub, with nothing delivered.
	for _, a := range h.m.live() {
		wantHub[a.name] = true
	}

	for name, app := range s.hubApps {
		if !wantHub[name] {
			bad("works", "hub Application %s should be gone (deleted: %v)", name, app.GetDeletionTimestamp() != nil)
		}
	}
	for name, works := range s.works {
		e, ok := findExpected(expected, name)
		for _, w := range works {
			if !ok || w.Namespace != e.cluster {
				bad("works", "orphaned ManifestWork %s/%s of hub Application %s", w.Namespace, w.Name, name)
			}
		}
	}
	for c, running := range s.spokeApps {
		for name := range running {
			if _, ok := wantOn[c][name]; !ok {
				bad("clusters", "Application %s on %s should not be there", name, c)
			}
		}
		for name, reports := range s.statusReports[c] {
			if _, ok := wantOn[c][name]; !ok {
				bad("reports", "stale ApplicationStatusReport %s/%s of %s", c, reports[0].Name, name)
			} else if len(reports) > 1 {
				bad("reports", "%d ApplicationStatusReports of %s in %s", len(reports), name, c)
			}
		}
		for name, e := range wantOn[c] {
			if app := running[name]; app != nil && len(s.statusReports[c][name]) == 0 {
				bad("reports", "no ApplicationStatusReport of %s on %s", name, c)
			} else if app != nil {
				if stale := reportDisagrees(&s.statusReports[c][name][0], app); stale != "" {
					bad("reports", "ApplicationStatusReport of %s on %s: %s", e.hubName, c, stale)
				}
			}
		}
		if mca := s.addons[c]; mca == nil || !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
			bad("reports", "the addon is not available on %s", c)
		}
	}
	h.checkSetReports(s, bad)
	return out, nil
}

func findExpected(expected []expectedApp, name string) (expectedApp, bool) {
	i := slices.IndexFunc(expected, func(e expectedApp) bool { return e.hubName == name })
	if i < 0 {
		return expectedApp{}, false
	}
	return expected[i], true
}

// checkExpected checks one Application the model expects on its cluster.
func (h *harness) checkExpected(ctx context.Context, s *fleetState, e expectedApp, report func(string, string, ...any)) {
	// Only an Application that meets every expectation is recorded as running.
	meets := true
	bad := func(invariant, format string, args ...any) {
		meets = false
		report(invariant, format, args...)
	}
	hubApp := s.hubApps[e.hubName]
	if hubApp == nil {
		bad("works", "hub Application %s is missing", e.hubName)
		return
	}
	works := s.works[e.hubName]
	spoke := s.spokeApps[e.cluster][e.hubName]
	seen, wasSeen := h.observed[e.epochKey]
	if e.broken != notBroken {
		h.checkBroken(s, e, hubApp, bad)
		// What was delivered before the typo stays; an Application broken before its
		// first delivery may have none.
		if len(works) > 1 || (len(works) == 1 && works[0].Namespace != e.cluster) || (wasSeen && len(works) != 1) {
			bad("works", "broken %s has %d ManifestWorks (want the one it had in %s)", e.hubName, len(works), e.cluster)
		}
		if !wasSeen && spoke == nil && len(works) == 0 {
			return
		}
	} else if len(works) != 1 {
		bad("works", "%d ManifestWorks of %s (want 1 in %s)", len(works), e.hubName, e.cluster)
	} else if w := works[0]; w.Namespace != e.cluster || w.Name != pullmodel.WorkName(hubApp) || w.DeletionTimestamp != nil {
		bad("works", "ManifestWork %s/%s of %s: want %s/%s, not being deleted", w.Namespace, w.Name, e.hubName, e.cluster, pullmodel.WorkName(hubApp))
	}
	if spoke == nil {
		if wasSeen {
			h.lost(e, "its Application is gone from "+e.cluster)
			bad("kept", "%s (%s): its Application is gone from %s", e.hubName, e.epochKey, e.cluster)
		} else {
			bad("clusters", "Application %s is not on %s", e.hubName, e.cluster)
		}
		return
	}
	if spoke.GetDeletionTimestamp() != nil {
		bad("clusters", "Application %s on %s is being deleted", e.hubName, e.cluster)
	}
	wantRev := h.revs[e.src.rev]
	if rev, path := str(spoke, "spec", "source", "targetRevision"), str(spoke, "spec", "source", "path"); rev != wantRev || path != e.src.path {
		bad("clusters", "Application %s on %s has source %s at %s, want %s at %s", e.hubName, e.cluster, short(rev), path, short(wantRev), e.src.path)
	}
	if sync, rev := str(spoke, "status", "sync", "status"), str(spoke, "status", "sync", "revision"); sync != "Synced" || rev != wantRev {
		bad("clusters", "Application %s on %s is %s at %s, want Synced at %s", e.hubName, e.cluster, sync, short(rev), short(wantRev))
	}
	cm := &corev1.ConfigMap{}
	cmErr := h.spokes[e.cluster].Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: "guestbook-ui"}, cm)
	if cmErr == nil {
		if want := fmt.Sprintf("Guestbook revision %d at %s", e.src.rev, e.src.path); cm.Data["title"] != want {
			bad("clusters", "guestbook of %s on %s says %q, want %q", e.hubName, e.cluster, cm.Data["title"], want)
		}
	} else {
		bad("clusters", "guestbook of %s on %s: %v", e.hubName, e.cluster, cmErr)
	}

	// The bad-input rule: within one delivery, what ran stays.
	if wasSeen {
		if spoke.GetUID() != seen.spokeUID {
			h.lost(e, "its Application was recreated")
			bad("kept", "%s (%s): its Application on %s was recreated (uid %s, was %s)", e.hubName, e.epochKey, e.cluster, spoke.GetUID(), seen.spokeUID)
		}
		if cmErr != nil || cm.UID != seen.guestbookUID {
			h.lost(e, "its guestbook was deleted or recreated")
			bad("kept", "%s (%s): its guestbook on %s was deleted or recreated", e.hubName, e.epochKey, e.cluster)
		}
	} else if meets {
		h.observed[e.epochKey] = observation{spokeUID: spoke.GetUID(), guestbookUID: cm.UID}
	}

	if e.broken == notBroken {
		for _, f := range [][]string{{"sync", "status"}, {"sync", "revision"}, {"health", "status"}} {
			path := append([]string{"status"}, f...)
			if hv, sv := str(hubApp, path...), str(spoke, path...); hv != sv {
				bad("status", "hub Application %s says %s %q, %s says %q", e.hubName, strings.Join(f, "."), short(hv), e.cluster, short(sv))
			}
		}
		for _, c := range hubConditions(hubApp) {
			bad("status", "valid hub Application %s has condition %s", e.hubName, c)
		}
	}
}

// reasonOf is the Warning Event reason the manager gives each typo.
var reasonOf = map[breakKind]string{
	breakLabel:   propagation.ReasonInvalidPullLabel,
	breakServer:  propagation.ReasonInvalidApplication,
	breakCluster: propagation.ReasonClusterNotFound,
	breakProject: tenancy.ReasonProjectNotFound,
}

// checkBroken: a broken Application says why on the hub, as a condition and an Event.
func (h *harness) checkBroken(s *fleetState, e expectedApp, hubApp *unstructured.Unstructured, bad func(string, string, ...any)) {
	if !slices.ContainsFunc(hubConditions(hubApp), func(c string) bool { return strings.HasPrefix(c, string(pullmodel.ConditionInvalidSpec)+": ") }) {
		bad("status", "broken hub Application %s (%s) has no %s condition", e.hubName, e.broken, pullmodel.ConditionInvalidSpec)
	}
	if !slices.ContainsFunc(s.events, func(ev corev1.Event) bool {
		return ev.InvolvedObject.Kind == "Application" && ev.InvolvedObject.Name == e.hubName &&
			ev.InvolvedObject.UID == hubApp.GetUID() && ev.Type == corev1.EventTypeWarning && ev.Reason == reasonOf[e.broken]
	}) {
		bad("status", "broken hub Application %s (%s) has no Warning Event %s", e.hubName, e.broken, reasonOf[e.broken])
	}
}

// checkSetReports: each existing ApplicationSet's report has exactly its clusters' entries,
// each naming the current hub Application and ManifestWork and what runs there.
func (h *harness) checkSetReports(s *fleetState, bad func(string, string, ...any)) {
	for _, set := range h.m.sets {
		r := s.setReports[set.name]
		if !set.exists {
			if r != nil {
				bad("reports", "MulticlusterApplicationSetReport %s of a deleted ApplicationSet", set.name)
			}
			continue
		}
		if r == nil {
			bad("reports", "no MulticlusterApplicationSetReport %s", set.name)
			continue
		}
		var want []string
		for _, c := range h.m.clusters {
			if !h.m.excluded[c] {
				want = append(want, c)
			}
		}
		entries := map[string]appsv1alpha1.ClusterCondition{}
		for _, e := range r.Statuses.ClusterConditions {
			if !slices.Contains(want, e.Cluster) {
				bad("reports", "report %s has a stale entry for %s (%s)", set.name, e.Cluster, e.App)
			}
			entries[e.Cluster] = e
		}
		if r.Statuses.Summary.Clusters != strconv.Itoa(len(want)) {
			bad("reports", "report %s counts %s clusters, want %d", set.name, r.Statuses.Summary.Clusters, len(want))
		}
		for _, c := range want {
			e, ok := entries[c]
			if !ok {
				bad("reports", "report %s has no entry for %s", set.name, c)
				continue
			}
			name := appSetAppName(c, set.name)
			hubApp := s.hubApps[name]
			if hubApp == nil {
				continue
			}
			if set.broken != notBroken {
				// What runs is what was delivered before the typo, or nothing on a cluster
				// that joined since: checkExpected holds each to that.
				continue
			}
			if app := fmt.Sprintf("%s/%s/%s/%s", argoNS, name, c, pullmodel.WorkName(hubApp)); e.App != app {
				bad("reports", "report %s entry %s names %s, want %s", set.name, c, e.App, app)
			}
			if rev := h.revs[set.src.rev]; e.SyncStatus != "Synced" || e.SyncRevision != rev {
				bad("reports", "report %s entry %s says %s at %s, want Synced at %s", set.name, c, e.SyncStatus, short(e.SyncRevision), short(rev))
			}
			if e.AgentAvailable == nil || !*e.AgentAvailable || e.Stale {
				bad("reports", "report %s entry %s: agent available %v, stale %v", set.name, c, e.AgentAvailable, e.Stale)
			}
		}
	}
}

// staleReports lists how cluster's ApplicationStatusReports differ from its pulled
// Applications, and with withAddon whether its addon is not available: empty once the hub
// is fresh.
func (h *harness) staleReports(ctx context.Context, cluster string, withAddon bool) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
	if err := h.spokes[cluster].List(ctx, list, client.InNamespace(argoNS)); err != nil {
		return nil, err
	}
	reports := &appsv1alpha1.ApplicationStatusReportList{}
	if err := h.hub.List(ctx, reports, client.InNamespace(cluster)); err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		app := &list.Items[i]
		hubName := app.GetAnnotations()[apps.AnnotationHubApplicationName]
		if hubName == "" || app.GetDeletionTimestamp() != nil {
			continue
		}
		j := slices.IndexFunc(reports.Items, func(r appsv1alpha1.ApplicationStatusReport) bool { return r.Source.HubApplicationName == hubName })
		if j < 0 {
			out = append(out, hubName+": no report")
		} else if d := reportDisagrees(&reports.Items[j], app); d != "" {
			out = append(out, hubName+": "+d)
		}
	}
	if !withAddon {
		return out, nil
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := h.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: fleet.PullAddonName}, mca); err != nil {
		return nil, err
	}
	if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
		out = append(out, "addon not available")
	}
	return out, nil
}

// reportDisagrees says how an agent's report differs from the Application on its cluster.
func reportDisagrees(r *appsv1alpha1.ApplicationStatusReport, app *unstructured.Unstructured) string {
	var diffs []string
	if got, want := string(r.Status.Sync.Status), str(app, "status", "sync", "status"); got != want {
		diffs = append(diffs, fmt.Sprintf("sync %q, cluster %q", got, want))
	}
	if got, want := r.Status.Sync.Revision, str(app, "status", "sync", "revision"); got != want {
		diffs = append(diffs, fmt.Sprintf("revision %s, cluster %s", short(got), short(want)))
	}
	if got, want := string(r.Status.Health.Status), str(app, "status", "health", "status"); got != want {
		diffs = append(diffs, fmt.Sprintf("health %q, cluster %q", got, want))
	}
	return strings.Join(diffs, ", ")
}

// hubConditions are the hub Application's own conditions, "<type>: <message>".
func hubConditions(app *unstructured.Unstructured) []string {
	all, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	var out []string
	for _, c := range all {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		if strings.HasPrefix(msg, pullmodel.HubConditionPrefix) {
			out = append(out, t+": "+msg)
		}
	}
	return out
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// short is a revision as git prints it short.
func short(rev string) string {
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}

// lost records that e's objects on its cluster were lost.
func (h *harness) lost(e expectedApp, what string) {
	h.figs.lostObjects[e.epochKey] = e.hubName + " on " + e.cluster + ": " + what
}
