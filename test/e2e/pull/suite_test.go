//go:build e2e

// Package pull_test is the end-to-end suite of the pull model on a real fleet
// (test/fleet): a hub and two managed clusters, each its own kube-apiserver, etcd and
// kube-controller-manager, joined with real OCM; real Argo CD v3 (repo-server and
// application-controller on each cluster, the applicationset-controller on the hub); the
// hub chart applied to the hub; our manager and one agent per cluster as processes of the
// built binary, with the credentials the chart's ServiceAccount and addon registration give
// them. For hub-rendered delivery (docs/cmp.md) a third cluster runs neither Argo CD nor the
// addon, and the hub runs Argo CD itself with the chart's Config Management Plugin.
//
// Run it with `make test-e2e` (`make test` runs it too). It is behind the e2e build tag
// (not part of `go test ./...`) and runs inside a private network namespace: TestMain re-executes the
// test binary in one. E2E_KEEP_DIR=1 keeps the fleet's directory (logs of every process)
// after a passing run; a failing run always keeps it and prints where it is.
package pull_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/suite"
)

func TestMain(m *testing.M) {
	os.Exit(fleet.RunInPrivateNetNS(m))
}

func TestPullModelE2E(t *testing.T) {
	suite.Run(t, "Pull model end to end on a real OCM fleet with real Argo CD")
}

var (
	pf       *fleet.PullFleet
	theFleet *fleet.Fleet
	pull     *fleet.PullModel
	hub      client.Client
	fleetDir string
	clusters = []string{"cluster1", "cluster2"}
	// hubRenderedCluster runs no Argo CD and no addon (PullFleetOptions.
	// ClustersWithoutPullModel): hub-rendered delivery reaches it. It stays out
	// of the default ManagedClusterSet, and so out of the guestbook's Placement.
	hubRenderedCluster = "cluster3"
)

// The addon lease window of the fleet's klusterlets: 5 x leaseDurationSeconds, looked at
// every leaseSyncInterval.
const (
	leaseDurationSeconds = 20
	leaseSyncInterval    = 5 * time.Second
)

var _ = BeforeSuite(func(ctx SpecContext) {
	Expect(fleet.InPrivateNetNS()).To(BeTrue(), "the e2e suite must run in a private network namespace")
	var err error
	fleetDir, err = os.MkdirTemp("", "e2e-fleet-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("fleet directory (logs): %s\n", fleetDir)
	// OCM's controllers run in this process and log through klog: into a file, not the
	// test's output.
	Expect(fleet.KlogToFile(filepath.Join(fleetDir, "ocm.log"))).To(Succeed())
	suiteStart := time.Now()

	pf, err = fleet.StartPullFleet(ctx, fleet.PullFleetOptions{
		Fleet: fleet.FleetOptions{
			Clusters: len(clusters) + 1, Dir: fleetDir, WorkStatusSyncInterval: 5 * time.Second,
			// Scenario 4 waits for an agent's lease to run out: 5 x 20 s instead of 5 minutes.
			AddOnLeaseDurationSeconds: leaseDurationSeconds, AddOnLeaseSyncInterval: leaseSyncInterval,
		},
		AppResync:                10 * time.Second,
		ClustersWithoutPullModel: []string{hubRenderedCluster},
		HubRendering:             true,
		Step: func(name string, took time.Duration) {
			AddReportEntry(name, took.Round(100*time.Millisecond).String(), ReportEntryVisibilityAlways)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	theFleet, pull = pf.Fleet, pf.Pull
	hub = theFleet.Hub.APIServer.Client
	// The manager's default tenancy checks deliver only to clusters of a ManagedClusterSet
	// bound to the Application's namespace. Every scenario delivers from argocd, as on a
	// hub with one team, in any order: bind the global set (every cluster) there for the
	// whole suite, as its admin would with `clusteradm clusterset bind global --namespace argocd`.
	// It goes with the fleet.
	createGlobalClusterSetBinding(ctx)
	setUpDone = true
	AddReportEntry("suite set-up", time.Since(suiteStart).Round(100*time.Millisecond).String(), ReportEntryVisibilityAlways)
}, NodeTimeout(10*time.Minute))

var _ = ReportAfterSuite("logs of a failed run", func(r Report) {
	if r.SuiteSucceeded {
		return
	}
	fmt.Fprintf(os.Stderr, "\nThe e2e suite failed: the fleet directory %s keeps every process's log.\n", fleetDir)
})

var _ = AfterSuite(func(_ SpecContext) {
	failed := anyFailed || !setUpDone
	if failed {
		dumpLogs()
	}
	var refused []string
	if setUpDone {
		var err error
		refused, err = pull.RefusedManagerRequests()
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(pf.Stop()).To(Succeed())
	// Any scenario's request the chart's RBAC refused the manager fails the run, even one
	// the manager retried around: the chart must grant what the manager does.
	Expect(refused).To(BeEmpty(), "requests of the manager the hub API server refused under the chart's RBAC")
	if !failed && fleetDir != "" && os.Getenv("E2E_KEEP_DIR") == "" {
		Expect(os.RemoveAll(fleetDir)).To(Succeed())
	}
}, NodeTimeout(3*time.Minute))

// anyFailed: a spec failed; setUpDone: BeforeSuite got to its end.
var anyFailed, setUpDone bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
	}
})

// dumpLogs prints the tails of our processes' logs and of Argo CD's controllers.
func dumpLogs() {
	if pf == nil {
		return
	}
	for _, f := range pf.Logs() {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		GinkgoWriter.Printf("---- %s ----\n%s\n", f, strings.Join(lines, "\n"))
	}
}

// decidedClusters are the clusters placement (in argoNS) decided on, over all its
// PlacementDecisions.
func decidedClusters(ctx SpecContext, g Gomega, placement string) []string {
	list := &clusterv1beta1.PlacementDecisionList{}
	g.ExpectWithOffset(1, hub.List(ctx, list, client.InNamespace(argoNS),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})).To(Succeed())
	var decided []string
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			decided = append(decided, cd.ClusterName)
		}
	}
	return decided
}
