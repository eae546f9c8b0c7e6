package aggregation

import (
	"slices"
	"sync"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// entryMemo is the pulled entries of one ApplicationSet's last rebuild, each with what it
// was built from. A change on one cluster queues a rebuild of the whole report, and in a
// large fleet computing every entry again took much of the controller's CPU
// (docs/benchmarks.md, "What the figures decided"); with the memo, a
// rebuild computes only the entries whose ManifestWork, report, agent availability or hub
// conditions changed, and reuses the rest.
type entryMemo map[reportKey]memoizedEntry

// memoizedEntry is one pulled entry and the versions of its inputs.
type memoizedEntry struct {
	work, report objectVersion
	agent        pullmodel.AgentAvailability
	// hubConditions are the hub Application's hub conditions the entry shows; it reads
	// their type and message.
	hubConditions []argov1alpha1.ApplicationCondition

	entry appsv1alpha1.ClusterCondition
	// resources are the report's resources as references, for statuses.resources.
	resources []appsv1alpha1.ResourceRef
	// agentOmitted is what the report left out of its resources.
	agentOmitted int32
}

// objectVersion names one version of one object: an object with the same UID and
// resourceVersion has the same content. The zero value is no object.
type objectVersion struct {
	uid             types.UID
	resourceVersion string
}

// versionOf is the version of an object; ok is false without a resourceVersion (an
// object that never came from an API server), which is never taken as unchanged.
func versionOf(uid types.UID, resourceVersion string) (objectVersion, bool) {
	return objectVersion{uid: uid, resourceVersion: resourceVersion}, resourceVersion != ""
}

// reuse returns the memoized entry of key when it was built from exactly these inputs.
func (m entryMemo) reuse(key reportKey, mw *workv1.ManifestWork, rep *appsv1alpha1.ApplicationStatusReport,
	agent pullmodel.AgentAvailability, hubConditions []argov1alpha1.ApplicationCondition) (memoizedEntry, bool) {
	prev, ok := m[key]
	if !ok {
		return memoizedEntry{}, false
	}
	work, versioned := versionOf(mw.UID, mw.ResourceVersion)
	if !versioned || prev.work != work {
		return memoizedEntry{}, false
	}
	var report objectVersion
	if rep != nil {
		if report, versioned = versionOf(rep.UID, rep.ResourceVersion); !versioned {
			return memoizedEntry{}, false
		}
	}
	if prev.report != report || !sameAvailability(prev.agent, agent) ||
		!slices.EqualFunc(prev.hubConditions, hubConditions, sameHubCondition) {
		return memoizedEntry{}, false
	}
	return prev, true
}

// memoize is the memo of an entry computed from these inputs.
func memoize(mw *workv1.ManifestWork, rep *appsv1alpha1.ApplicationStatusReport, agent pullmodel.AgentAvailability,
	hubConditions []argov1alpha1.ApplicationCondition, entry appsv1alpha1.ClusterCondition,
	resources []appsv1alpha1.ResourceRef, agentOmitted int32) memoizedEntry {
	m := memoizedEntry{
		work:  objectVersion{uid: mw.UID, resourceVersion: mw.ResourceVersion},
		agent: agent, hubConditions: hubConditions,
		entry: entry, resources: resources, agentOmitted: agentOmitted,
	}
	if rep != nil {
		m.report = objectVersion{uid: rep.UID, resourceVersion: rep.ResourceVersion}
	}
	return m
}

func sameAvailability(a, b pullmodel.AgentAvailability) bool {
	if a.Available != b.Available || a.Reason != b.Reason || (a.Since == nil) != (b.Since == nil) {
		return false
	}
	return a.Since == nil || a.Since.Equal(b.Since)
}

func sameHubCondition(a, b argov1alpha1.ApplicationCondition) bool {
	return a.Type == b.Type && a.Message == b.Message
}

// entryMemos holds the entryMemo of each ApplicationSet. The controller never rebuilds
// one ApplicationSet's report in two workers at once, so a memo is only ever taken and
// put back by one reconcile; the lock guards the map of them.
type entryMemos struct {
	mu       sync.Mutex
	byAppSet map[types.NamespacedName]entryMemo
}

// build is buildReusing on the memo of the ApplicationSet key's last build, whose memo it
// keeps for the next.
func (m *entryMemos) build(key types.NamespacedName, in Inputs, limits Limits) appsv1alpha1.AppConditions {
	statuses, memo := buildReusing(in, limits, m.get(key))
	m.put(key, memo)
	return statuses
}

// get is key's memo; nil when there is none.
func (m *entryMemos) get(key types.NamespacedName) entryMemo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byAppSet[key]
}

// put keeps memo as key's.
func (m *entryMemos) put(key types.NamespacedName, memo entryMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byAppSet == nil {
		m.byAppSet = map[types.NamespacedName]entryMemo{}
	}
	m.byAppSet[key] = memo
}

// forget drops key's memo: its ApplicationSet is gone or has no report.
func (m *entryMemos) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byAppSet, key)
}
