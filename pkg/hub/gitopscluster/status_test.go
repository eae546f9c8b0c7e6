package gitopscluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
)

func TestComputeStatus(t *testing.T) {
	ok := outcome{argoNamespace: "argocd", clusters: []string{"c1", "c2"}}
	type conds map[string]string // type -> "Status/Reason"
	allTrue := conds{
		appsv1beta1.ConditionReady:                "True/Ready",
		appsv1beta1.ConditionPlacementResolved:    "True/PlacementResolved",
		appsv1beta1.ConditionArgoNamespaceFound:   "True/ArgoNamespaceFound",
		appsv1beta1.ConditionClusterSecretsSynced: "True/ClusterSecretsSynced",
		appsv1beta1.ConditionGeneratorConfigured:  "True/GeneratorConfigured",
	}
	with := func(c conds, kv ...string) conds {
		out := conds{}
		for k, v := range c {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	waiting := []string{
		appsv1beta1.ConditionClusterSecretsSynced, "Unknown/WaitingForPrerequisites",
		appsv1beta1.ConditionGeneratorConfigured, "Unknown/WaitingForPrerequisites",
	}
	cases := map[string]struct {
		o           outcome
		wantPhase   string
		wantMessage string
		wantConds   conds
		// wantClusterCount: the gc below starts with clusterCount 7, which stays when the
		// reconcile did not get as far as writing the cluster Secrets.
		wantClusterCount int32
	}{
		"successful": {
			o: ok, wantClusterCount: 2, wantPhase: "successful", wantConds: allTrue,
			wantMessage: "Added 2 managed clusters [c1 c2] to Argo CD namespace argocd",
		},
		"blank implied": {
			o:                func() outcome { o := ok; o.blankImplied = true; return o }(),
			wantClusterCount: 2, wantPhase: "successful", wantMessage: "Added 2 managed clusters [c1 c2] to Argo CD namespace argocd",
			wantConds: with(allTrue, appsv1beta1.ConditionClusterSecretsSynced, "True/BlankClusterSecretsImplied"),
		},
		"invalid placementRef": {
			o:                outcome{argoNamespace: "argocd", placementReason: appsv1beta1.ReasonInvalidPlacementRef, placementMessage: "bad kind"},
			wantClusterCount: 7, wantPhase: "failed", wantMessage: "bad kind",
			wantConds: with(allTrue, append([]string{
				appsv1beta1.ConditionReady, "False/InvalidPlacementRef",
				appsv1beta1.ConditionPlacementResolved, "False/InvalidPlacementRef",
			}, waiting...)...),
		},
		"missing Argo CD namespace": {
			o:                outcome{argoNamespace: "nope", argoNamespaceMissing: true},
			wantClusterCount: 7, wantPhase: "failed", wantMessage: `Argo CD namespace "nope" does not exist`,
			wantConds: with(allTrue, append([]string{
				appsv1beta1.ConditionReady, "False/ArgoNamespaceNotFound",
				appsv1beta1.ConditionArgoNamespaceFound, "False/ArgoNamespaceNotFound",
			}, waiting...)...),
		},
		"placement first, then namespace": {
			o:                outcome{argoNamespace: "nope", argoNamespaceMissing: true, placementReason: appsv1beta1.ReasonPlacementNotFound, placementMessage: "no placement"},
			wantClusterCount: 7, wantPhase: "failed", wantMessage: "no placement",
			wantConds: with(allTrue, append([]string{
				appsv1beta1.ConditionReady, "False/PlacementNotFound",
				appsv1beta1.ConditionPlacementResolved, "False/PlacementNotFound",
				appsv1beta1.ConditionArgoNamespaceFound, "False/ArgoNamespaceNotFound",
			}, waiting...)...),
		},
		"conflict": {
			o: func() outcome {
				o := ok
				o.conflicts = []string{"cluster c3: Secret argocd/c3-cluster-secret"}
				return o
			}(),
			wantClusterCount: 2, wantPhase: "failed",
			wantMessage: "Not registered, a Secret of the same name that no GitOpsCluster created exists: " +
				"cluster c3: Secret argocd/c3-cluster-secret",
			wantConds: with(allTrue,
				appsv1beta1.ConditionReady, "False/ClusterSecretConflict",
				appsv1beta1.ConditionClusterSecretsSynced, "False/ClusterSecretConflict"),
		},
		"Argo CD namespace not allowed": {
			o:                outcome{argoNamespace: "team-b", argoNamespaceNotAllowed: true, allowedArgoNamespaces: []string{"argocd", "gitops"}},
			wantClusterCount: 7, wantPhase: "failed",
			wantMessage: `Argo CD namespace "team-b" is not one this manager may write to [argocd gitops]: name one of those, ` +
				"or have the hub administrator add it to the chart value rbac.argoNamespaces",
			wantConds: with(allTrue, append([]string{
				appsv1beta1.ConditionReady, "False/ArgoNamespaceNotAllowed",
				appsv1beta1.ConditionArgoNamespaceFound, "False/ArgoNamespaceNotAllowed",
			}, waiting...)...),
		},
		"generator conflict": {
			o: func() outcome {
				o := ok
				o.generatorConflicts = []string{"Role argocd/argocd-applicationset-controller-placement"}
				return o
			}(),
			wantClusterCount: 2, wantPhase: "failed",
			wantMessage: "Left alone, they exist without the label app.kubernetes.io/managed-by=argocd-pull-addon (not written by a GitOpsCluster): " +
				"Role argocd/argocd-applicationset-controller-placement; delete them, or add the label to let GitOpsClusters manage them",
			wantConds: with(allTrue,
				appsv1beta1.ConditionReady, "False/GeneratorConfigConflict",
				appsv1beta1.ConditionGeneratorConfigured, "False/GeneratorConfigConflict"),
		},
		"write errors": {
			o: func() outcome {
				o := ok
				o.secretsErr = errors.New("boom")
				o.generatorErr = errors.New("bang")
				return o
			}(),
			wantClusterCount: 7, wantPhase: "failed", wantMessage: "Syncing cluster Secrets failed: boom",
			wantConds: with(allTrue,
				appsv1beta1.ConditionReady, "False/ClusterSecretsFailed",
				appsv1beta1.ConditionClusterSecretsSynced, "False/ClusterSecretsFailed",
				appsv1beta1.ConditionGeneratorConfigured, "False/GeneratorConfigFailed"),
		},
	}
	now := metav1.NewTime(time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gc := newGitOpsCluster("gc").obj()
			gc.Status.ClusterCount = 7
			st := computeStatus(gc, tc.o, now)
			if st.Phase != tc.wantPhase || st.Message != tc.wantMessage {
				t.Fatalf("phase %q message %q, want %q %q", st.Phase, st.Message, tc.wantPhase, tc.wantMessage)
			}
			if st.ClusterCount != tc.wantClusterCount {
				t.Fatalf("clusterCount %d, want %d", st.ClusterCount, tc.wantClusterCount)
			}
			if !st.LastUpdateTime.Equal(&now) {
				t.Fatalf("lastUpdateTime %v", st.LastUpdateTime)
			}
			got := conds{}
			for _, c := range st.Conditions {
				got[c.Type] = fmt.Sprintf("%s/%s", c.Status, c.Reason)
				if c.ObservedGeneration != 1 || c.Message == "" {
					t.Errorf("condition %s: observedGeneration %d, message %q", c.Type, c.ObservedGeneration, c.Message)
				}
			}
			if diff := cmp.Diff(tc.wantConds, got); diff != "" {
				t.Fatalf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeStatusIsStable(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	gc := newGitOpsCluster("gc").obj()
	o := outcome{argoNamespace: "argocd", clusters: []string{"c1"}}

	gc.Status = computeStatus(gc, o, t0)
	again := computeStatus(gc, o, t1)
	if diff := cmp.Diff(gc.Status, again); diff != "" {
		t.Fatalf("same outcome changed the status (-first +second):\n%s", diff)
	}

	// A new cluster changes the message, so lastUpdateTime moves; conditions that stay
	// True keep their transition time.
	o.clusters = []string{"c1", "c2"}
	changed := computeStatus(gc, o, t1)
	if !changed.LastUpdateTime.Equal(&t1) {
		t.Fatalf("lastUpdateTime %v, want %v", changed.LastUpdateTime, t1)
	}
	ready := meta.FindStatusCondition(changed.Conditions, appsv1beta1.ConditionReady)
	if !ready.LastTransitionTime.Equal(&t0) {
		t.Fatalf("Ready transition time %v, want %v", ready.LastTransitionTime, t0)
	}
	if diff := cmp.Diff(gc.Status.Conditions, changed.Conditions,
		cmpopts.IgnoreFields(metav1.Condition{}, "Message")); diff != "" {
		t.Fatalf("conditions changed beyond messages:\n%s", diff)
	}
}

func TestSuccessMessageIsBounded(t *testing.T) {
	var clusters []string
	for i := range 500 {
		clusters = append(clusters, fmt.Sprintf("cluster-%03d", i))
	}
	msg := successMessage(outcome{argoNamespace: "argocd", clusters: clusters})
	if !strings.Contains(msg, "and 480 more") || len(msg) > 400 {
		t.Fatalf("message %q (%d chars)", msg, len(msg))
	}
}
