package gitopscluster_test

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1beta1"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/gitopscluster"
)

// reconciles counts, per GitOpsCluster, the reconciles the controller started. It reads
// controller-runtime's own V(5) "Reconciling" log line, which names the request, so the
// controller runs unmodified.
var reconciles = &reconcileLog{counts: map[client.ObjectKey]int{}}

type reconcileLog struct {
	mu     sync.Mutex
	counts map[client.ObjectKey]int
}

func (l *reconcileLog) record(kv []any) {
	var controller, ns, name string
	for i := 0; i+1 < len(kv); i += 2 {
		v, _ := kv[i+1].(string)
		switch kv[i] {
		case "controller":
			controller = v
		case "namespace":
			ns = v
		case "name":
			name = v
		}
	}
	if controller != gitopscluster.ControllerName || name == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[client.ObjectKey{Namespace: ns, Name: name}]++
}

func (l *reconcileLog) of(key client.ObjectKey) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key]
}

// recordingSink passes everything on to the suite's logger and records "Reconciling".
type recordingSink struct {
	logr.LogSink
	values []any
}

func (s recordingSink) Enabled(level int) bool { return level == 5 || s.LogSink.Enabled(level) }

func (s recordingSink) Info(level int, msg string, kv ...any) {
	if level == 5 && msg == "Reconciling" {
		reconciles.record(append(slices.Clone(s.values), kv...))
	}
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithValues(kv...), values: append(slices.Clone(s.values), kv...)}
}

func (s recordingSink) WithName(name string) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithName(name), values: s.values}
}

// recordingLogger wraps base so that reconciles are counted.
func recordingLogger(base logr.Logger) logr.Logger {
	return logr.New(recordingSink{LogSink: base.GetSink()})
}

// settled waits until none of keys has been reconciled for three seconds and returns their
// counts. On a loaded machine the events of a write (the owned Secret's, through its own
// cache) can arrive more than a second apart; a shorter window let a late one of the
// previous step count in the next.
func settled(keys ...client.ObjectKey) []int {
	GinkgoHelper()
	counts := func() []int {
		out := make([]int, len(keys))
		for i, k := range keys {
			out[i] = reconciles.of(k)
		}
		return out
	}
	var got []int
	Eventually(func(g Gomega) {
		got = counts()
		g.Consistently(counts, 3*time.Second, 100*time.Millisecond).Should(Equal(got))
	}, timeout, interval).Should(Succeed())
	return got
}

var _ = Describe("GitOpsCluster event routing", func() {
	It("reconciles only the GitOpsCluster a PlacementDecision or ManagedCluster change concerns", func(ctx context.Context) {
		// Two GitOpsClusters sharing one Argo CD namespace, each with its own Placement.
		argoNs := unique("argocd")
		createNamespace(ctx, argoNs)
		c1, c2, c3 := unique("cluster"), unique("cluster"), unique("cluster")
		for _, c := range []string{c1, c2, c3} {
			createManagedCluster(ctx, c, map[string]string{"env": "dev"})
		}
		createPlacement(ctx, argoNs, "first")
		setDecisions(ctx, argoNs, "first", c1)
		createPlacement(ctx, argoNs, "second")
		setDecisions(ctx, argoNs, "second", c2)
		a := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "a", argoNs, placementRef("first"), ptr.To(true)))
		b := client.ObjectKeyFromObject(createGitOpsCluster(ctx, argoNs, "b", argoNs, placementRef("second"), ptr.To(true)))
		expectPhase(ctx, a, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		expectPhase(ctx, b, appsv1beta1.PhaseSuccessful, appsv1beta1.ReasonReady)
		before := settled(a, b)
		Expect(before[0]).To(BeNumerically(">", 0), "the recorder sees the controller's reconciles")

		By("adding a cluster to the second Placement's decisions")
		setDecisions(ctx, argoNs, "second", c2, c3)
		Eventually(getSecret(ctx, secretKey(argoNs, c3)), timeout, interval).ShouldNot(BeNil())
		after := settled(a, b)
		Expect(after[1]).To(BeNumerically(">", before[1]), "b was reconciled")
		Expect(after[0]).To(Equal(before[0]), "a was not reconciled")

		By("relabelling the first Placement's cluster")
		mc := &clusterv1.ManagedCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: c1}, mc)).To(Succeed())
		mc.Labels["env"] = "prod"
		Expect(k8s.Update(ctx, mc)).To(Succeed())
		Eventually(func(g Gomega) map[string]string {
			return getSecret(ctx, secretKey(argoNs, c1))(g).Labels
		}, timeout, interval).Should(HaveKeyWithValue("env", "prod"))
		last := settled(a, b)
		Expect(last[0]).To(BeNumerically(">", after[0]), "a was reconciled")
		Expect(last[1]).To(Equal(after[1]), "b was not reconciled")
	})
})
