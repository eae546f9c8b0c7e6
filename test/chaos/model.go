//go:build e2e

package chaos

import (
	"fmt"
	"slices"
)

// The model: what the operations so far asked for. Operations change it as they are
// chosen (before they are sent), and only the seeded random source and the model decide
// the next operation, so a seed replays the same sequence of operations whatever the
// fleet's timing. The invariants compare the fleet with what the model expects.

// source is a pulled Application's source: one of the guestbook repository's commits and
// one of its two paths (the same objects under both, different data).
type source struct {
	rev  int
	path string
}

// breakKind is a user's typo from the bad-input table, made on a delivered Application.
// Each must leave what runs on the cluster exactly as it was and say why on the hub.
type breakKind string

const (
	notBroken breakKind = ""
	// breakLabel sets the pull label to "True", which is neither "true" nor "false".
	breakLabel breakKind = "pull label True"
	// breakServer sets the destination-server override without its https://.
	breakServer breakKind = "destination-server typo"
	// breakCluster names a managed cluster that does not exist.
	breakCluster breakKind = "unknown cluster"
	// breakProject names an AppProject that does not exist.
	breakProject breakKind = "unknown project"
)

var breakKinds = []breakKind{breakLabel, breakServer, breakCluster, breakProject}

// standaloneApp is a pulled hub Application the harness created itself.
type standaloneApp struct {
	name string
	// cluster is the target while valid; a broken Application keeps its last valid target
	// in the model (the typo is on the hub object only).
	cluster   string
	finalizer bool
	marked    bool
	broken    breakKind
	src       source
	deleted   bool
	// epoch counts deliveries: a create, retarget, unmark or re-mark starts a new one,
	// and objects seen on the cluster in one epoch must stay there for all of it.
	epoch int
	// settled: nothing changed it since the last quiet period whose invariants held, so
	// what it asks for is what was delivered. Only a settled Application is broken: the
	// bad-input rule keeps what was delivered, and right after a retarget that may still
	// be the previous cluster's.
	settled bool
}

// appSet is one of the harness's ApplicationSets; it renders an Application per cluster
// of the appsets' Placement.
type appSet struct {
	name   string
	exists bool
	// src is the template's source; the template's typo, if any, is in broken.
	src    source
	broken breakKind
	epoch  int
	// settled: as for standaloneApp, only a settled set's template is broken.
	settled bool
}

// model is the whole expected state.
type model struct {
	clusters []string
	// excluded clusters are out of the ApplicationSets' Placement.
	excluded map[string]bool
	// placementEpochs counts how often each cluster left the appsets' Placement.
	placementEpochs map[string]int
	// addonDisabled clusters have no ManagedClusterAddOn (and so no agent).
	addonDisabled map[string]bool
	apps          []*standaloneApp
	sets          []*appSet
	nextApp       int
}

func newModel(clusters []string, setNames []string) *model {
	m := &model{clusters: clusters, excluded: map[string]bool{}, placementEpochs: map[string]int{}, addonDisabled: map[string]bool{}}
	for _, n := range setNames {
		m.sets = append(m.sets, &appSet{name: n, exists: true, src: source{path: guestbookPaths[0]}})
	}
	return m
}

// expectedApp is a pulled Application the fleet must run.
type expectedApp struct {
	hubName string
	cluster string
	// appSet is the owning ApplicationSet's name; empty for a standalone Application.
	appSet string
	src    source
	// broken: the hub Application has a typo; what was delivered before stays, nothing
	// new is delivered.
	broken breakKind
	// namespace is the guestbook's destination namespace on the cluster.
	namespace string
	// epochKey identifies one continuous delivery of the Application to the cluster.
	epochKey string
}

// live are the standalone Applications not deleted.
func (m *model) live() []*standaloneApp {
	var out []*standaloneApp
	for _, a := range m.apps {
		if !a.deleted {
			out = append(out, a)
		}
	}
	return out
}

// expected lists every pulled Application that must exist on a cluster: marked standalone
// Applications (valid or broken) and each existing ApplicationSet's Application on every
// cluster of its Placement.
func (m *model) expected() []expectedApp {
	var out []expectedApp
	for _, a := range m.live() {
		if !a.marked {
			continue
		}
		out = append(out, expectedApp{
			hubName: a.name, cluster: a.cluster, src: a.src, broken: a.broken, namespace: a.name,
			epochKey: fmt.Sprintf("%s@%s#%d", a.name, a.cluster, a.epoch),
		})
	}
	for _, s := range m.sets {
		if !s.exists {
			continue
		}
		for _, c := range m.clusters {
			if m.excluded[c] {
				continue
			}
			out = append(out, expectedApp{
				hubName: appSetAppName(c, s.name), cluster: c, appSet: s.name,
				src: s.src, broken: s.broken, namespace: s.name,
				// The cluster's Application lives as long as the set does and the cluster
				// stays in the Placement; leaving either starts a new epoch.
				epochKey: fmt.Sprintf("%s@%s#%d.%d", appSetAppName(c, s.name), c, s.epoch, m.placementEpoch(c)),
			})
		}
	}
	return out
}

func (m *model) placementEpoch(cluster string) int { return m.placementEpochs[cluster] }

// appSetAppName is the name the harness's ApplicationSets give their Application on
// cluster (template name '{{name}}-<set>').
func appSetAppName(cluster, set string) string { return cluster + "-" + set }

// setNamed is the ApplicationSet name of the model.
func (m *model) setNamed(name string) *appSet {
	i := slices.IndexFunc(m.sets, func(s *appSet) bool { return s.name == name })
	if i < 0 {
		return nil
	}
	return m.sets[i]
}
