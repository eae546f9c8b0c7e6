package aggregation

import (
	"fmt"
	"testing"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"

	"github.com/google/go-cmp/cmp"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// versionedFleet is fleet(n, failEvery) with the UIDs and resourceVersions the API server
// gives, so the memo can recognise unchanged objects.
func versionedFleet(n, failEvery int) Inputs {
	in := fleet(n, failEvery)
	for i := range in.Works {
		in.Works[i].UID, in.Works[i].ResourceVersion = types.UID(fmt.Sprintf("work-%d", i)), "1"
	}
	for i := range in.Reports {
		in.Reports[i].UID, in.Reports[i].ResourceVersion = types.UID(fmt.Sprintf("report-%d", i)), "1"
	}
	in.HubConditions = map[types.NamespacedName][]argov1alpha1.ApplicationCondition{}
	return in
}

// TestBuildReusingEqualsBuild changes one input of one cluster in each way the sources
// change, and checks that a rebuild on the memo of the previous build equals a build from
// scratch: a memoized entry whose input changed would show the old state.
func TestBuildReusingEqualsBuild(t *testing.T) {
	const cluster = "managed-cluster-0003"
	hubApp := types.NamespacedName{Namespace: appSetNamespace, Name: "guestbook-" + cluster}
	// The cluster is the fourth of versionedFleet: its work and report are the fourth.
	workAt, reportAt := 3, 3
	agentUnavailable := func(in *Inputs) { in.Agents[cluster] = unavailable() }
	for name, c := range map[string]struct {
		// base applies to the inputs before and after the change.
		base, change func(in *Inputs)
	}{
		"the report's health changes": {change: func(in *Inputs) {
			r := &in.Reports[reportAt]
			r.Status.Health.Status, r.ResourceVersion = appsv1alpha1.HealthStatusDegraded, "2"
		}},
		"the report's resources change": {change: func(in *Inputs) {
			r := &in.Reports[reportAt]
			r.Status.Resources = append(r.Status.Resources, appsv1alpha1.ResourceStatusReport{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "new"})
			r.ResourceVersion = "2"
		}},
		"the report is deleted and recreated with the same resourceVersion text": {change: func(in *Inputs) {
			r := &in.Reports[reportAt]
			r.UID, r.Status.Sync.Status = "report-3-again", appsv1alpha1.SyncStatusOutOfSync
		}},
		"the report goes away": {change: func(in *Inputs) {
			in.Reports = append(in.Reports[:reportAt], in.Reports[reportAt+1:]...)
		}},
		// While the agent is available its report's scalars win over the work's.
		"the work's feedback changes": {base: agentUnavailable, change: func(in *Inputs) {
			w := &in.Works[workAt]
			w.Status.ResourceStatus.Manifests = newWork(cluster, hubApp.Name).feedback("Progressing", "OutOfSync", "abc", "Running", "2026-11-01T10:00:00Z").w.Status.ResourceStatus.Manifests
			w.ResourceVersion = "2"
		}},
		"the agent becomes unavailable": {change: agentUnavailable},
		"the agent's addon goes away": {change: func(in *Inputs) {
			delete(in.Agents, cluster)
		}},
		"the agent's unavailability changes its reason": {base: agentUnavailable, change: func(in *Inputs) {
			a := unavailable()
			a.Reason = "Available is False (ProbeUnavailable)"
			in.Agents[cluster] = a
		}},
		"the hub Application gets a hub condition": {change: func(in *Inputs) {
			in.HubConditions[hubApp] = []argov1alpha1.ApplicationCondition{{Type: pullmodel.ConditionInvalidSpec, Message: "spec.destination names no cluster"}}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			before, after := versionedFleet(20, 4), versionedFleet(20, 4)
			if c.base != nil {
				c.base(&before)
				c.base(&after)
			}
			c.change(&after)
			_, memo := buildReusing(before, DefaultLimits, nil)
			got, _ := buildReusing(after, DefaultLimits, memo)
			if want := Build(after, DefaultLimits); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("a rebuild on the memo differs from a build from scratch (-scratch +memo):\n%s", cmp.Diff(want, got))
			}
			if equality.Semantic.DeepEqual(got, Build(before, DefaultLimits)) {
				t.Errorf("the change left the report as it was: the case tests nothing")
			}
		})
	}
}

// TestBuildReusingReusesUnchangedEntries checks that the memo is used: an entry whose
// inputs kept their versions is taken from the memo even where its content would now
// differ (which the API server never does: a new content has a new resourceVersion).
func TestBuildReusingReusesUnchangedEntries(t *testing.T) {
	// Every entry listed, none bounded.
	all := Limits{Levels: DefaultLimits.Levels[:1]}
	before := versionedFleet(20, 4)
	_, memo := buildReusing(before, all, nil)
	after := versionedFleet(20, 4)
	after.Reports[1].Status.Health.Status = appsv1alpha1.HealthStatusDegraded // resourceVersion kept
	got, _ := buildReusing(after, all, memo)
	if h := got.ClusterConditions[1].HealthStatus; h != string(appsv1alpha1.HealthStatusHealthy) {
		t.Errorf("entry 1's health = %q, want the memoized Healthy: the memo was not used", h)
	}
	// Without a resourceVersion (an object that never came from an API server) nothing is
	// taken from the memo.
	after.Reports[1].ResourceVersion = ""
	got, _ = buildReusing(after, all, memo)
	if h := got.ClusterConditions[1].HealthStatus; h != string(appsv1alpha1.HealthStatusDegraded) {
		t.Errorf("entry 1's health = %q, want Degraded: an unversioned report was taken as unchanged", h)
	}
}

// TestBuildReusingDropsLeftClusters checks that the memo of a build holds only the
// entries of that build: a cluster that left does not come back from an older memo.
func TestBuildReusingDropsLeftClusters(t *testing.T) {
	_, memo := buildReusing(versionedFleet(20, 4), DefaultLimits, nil)
	fewer := versionedFleet(20, 4)
	fewer.Works = fewer.Works[:10]
	got, next := buildReusing(fewer, DefaultLimits, memo)
	if len(next) != 10 {
		t.Errorf("the memo holds %d entries after a build of 10", len(next))
	}
	if want := Build(fewer, DefaultLimits); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("a rebuild on the memo differs from a build from scratch (-scratch +memo):\n%s", cmp.Diff(want, got))
	}
}

// BenchmarkBuild rebuilds the report of an ApplicationSet on 1,000 healthy clusters (the
// bench-scale fleet between rollouts) after one
// cluster's report changed, from scratch and on the memo of the previous build.
//
//	go test ./pkg/hub/aggregation/ -run '^$' -bench Build -benchmem
func BenchmarkBuild(b *testing.B) {
	for _, reuse := range []bool{false, true} {
		name := "from scratch"
		if reuse {
			name = "on the memo"
		}
		b.Run(name, func(b *testing.B) {
			in := versionedFleet(1000, 0)
			_, memo := buildReusing(in, DefaultLimits, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r := &in.Reports[i%len(in.Reports)]
				r.ResourceVersion = fmt.Sprint(i + 2)
				if !reuse {
					memo = nil
				}
				_, memo = buildReusing(in, DefaultLimits, memo)
			}
		})
	}
}
