//go:build e2e

// Package pull_test is the end-to-end suite of the pull model (issue 6) on a real fleet
// (test/fleet): a hub and two managed clusters, each its own kube-apiserver, etcd and
// kube-controller-manager, joined with real OCM; real Argo CD v3 (repo-server and
// application-controller on each cluster, the applicationset-controller on the hub); the
// hub chart applied to the hub; our manager and one agent per cluster as processes of the
// built binary, with the credentials the chart's ServiceAccount and addon registration give
// them.
//
// Run it with `make test-e2e`. It is behind the e2e build tag (not part of `go test ./...`
// or `make test`) and runs inside a private network namespace: TestMain re-executes the
// test binary in one. E2E_KEEP_DIR=1 keeps the fleet's directory (logs of every process)
// after a passing run; a failing run always keeps it and prints where it is.
package pull_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

func TestMain(m *testing.M) {
	os.Exit(fleet.RunInPrivateNetNS(m))
}

func TestPullModelE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	logf.SetLogger(GinkgoLogr)
	RunSpecs(t, "Pull model end to end on a real OCM fleet with real Argo CD")
}

var (
	theFleet *fleet.Fleet
	pull     *fleet.PullModel
	hubArgo  *fleet.ArgoCD
	argos    = map[string]*fleet.ArgoCD{}
	hub      client.Client
	fleetDir string
	clusters = []string{"cluster1", "cluster2"}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	Expect(fleet.InPrivateNetNS()).To(BeTrue(), "the e2e suite must run in a private network namespace")
	var err error
	fleetDir, err = os.MkdirTemp("", "e2e-fleet-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("fleet directory (logs): %s\n", fleetDir)
	// OCM's controllers run in this process and log through klog: into a file, not the
	// test's output.
	ocmLog, err := os.Create(filepath.Join(fleetDir, "ocm.log"))
	Expect(err).NotTo(HaveOccurred())
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	Expect(klogFlags.Set("logtostderr", "false")).To(Succeed())
	Expect(klogFlags.Set("alsologtostderr", "false")).To(Succeed())
	Expect(klogFlags.Set("stderrthreshold", "FATAL")).To(Succeed())
	klog.SetOutput(ocmLog)
	suiteStart := time.Now()

	theFleet, err = fleet.StartFleet(ctx, fleet.FleetOptions{
		Clusters: len(clusters), Dir: fleetDir, WorkStatusSyncInterval: 5 * time.Second,
	})
	Expect(err).NotTo(HaveOccurred())
	hub = theFleet.Hub.APIServer.Client
	AddReportEntry("fleet start", fmt.Sprintf("hub + %d clusters in %s", len(theFleet.Clusters),
		theFleet.StartDuration.Round(100*time.Millisecond)), ReportEntryVisibilityAlways)

	By("starting Argo CD on every cluster (repo-server, application-controller)")
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := map[string]error{}
	for _, c := range theFleet.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := fleet.StartArgoCD(fleet.ArgoCDOptions{
				APIServer: c.APIServer, KubeconfigFile: c.KubeconfigFile, Name: c.Name,
				Dir: filepath.Join(fleetDir, c.Name, "argocd"), KeepDir: true, AppResync: 10 * time.Second,
			})
			mu.Lock()
			defer mu.Unlock()
			if a != nil {
				argos[c.Name] = a
			}
			errs[c.Name] = err
		}()
	}
	wg.Wait()
	for name, err := range errs {
		Expect(err).NotTo(HaveOccurred(), "Argo CD on %s", name)
	}
	AddReportEntry("Argo CD on the clusters", time.Since(start).Round(100*time.Millisecond).String(), ReportEntryVisibilityAlways)

	By("installing the hub chart and starting the manager as its ServiceAccount")
	start = time.Now()
	// The hub serves Argo CD v3's CRDs, as a hub running Argo CD 3 does.
	Expect(fleet.InstallArgoCDV3CRDs(theFleet.Hub.APIServer.Config)).To(Succeed())
	pull, err = fleet.InstallPullModel(ctx, theFleet, fleet.PullModelOptions{})
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("hub chart + manager", time.Since(start).Round(100*time.Millisecond).String(), ReportEntryVisibilityAlways)

	By("starting the applicationset-controller on the hub")
	hubArgo, err = fleet.StartArgoCDApplicationSetController(fleet.ArgoCDApplicationSetOptions{
		APIServer: theFleet.Hub.APIServer, KubeconfigFile: theFleet.Hub.KubeconfigFile,
		Dir: filepath.Join(fleetDir, "hub", "argocd"), KeepDir: true, SkipCRDs: true,
	})
	Expect(err).NotTo(HaveOccurred())

	By("enabling the addon on every cluster as `clusteradm addon enable --names argocd-pull --clusters c --namespace ns` does, and starting each agent where its Deployment would run")
	start = time.Now()
	for _, c := range clusters {
		Expect(pull.EnableAddon(ctx, c, "")).To(Succeed())
	}
	for _, c := range clusters {
		Expect(pull.StartAgent(ctx, c, "")).To(Succeed(), "agent of %s", c)
	}
	AddReportEntry("addon enabled, agents running", time.Since(start).Round(100*time.Millisecond).String(), ReportEntryVisibilityAlways)
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
	Expect(pull.Stop()).To(Succeed())
	for _, a := range argos {
		Expect(a.Stop()).To(Succeed())
	}
	Expect(hubArgo.Stop()).To(Succeed())
	Expect(theFleet.Stop()).To(Succeed())
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

// dumpLogs prints the tails of our processes' logs.
func dumpLogs() {
	if pull == nil {
		return
	}
	files := []string{pull.ManagerLog()}
	for _, c := range clusters {
		files = append(files, pull.AgentLog(c))
		if a := argos[c]; a != nil {
			files = append(files, a.Logs("argocd-application-controller"))
		}
	}
	if hubArgo != nil {
		files = append(files, hubArgo.Logs("argocd-applicationset-controller"))
	}
	for _, f := range files {
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
