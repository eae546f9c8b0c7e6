package process_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// get returns the status code and body of http://addr/path, or an error.
func get(addr, path string) (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s%s", addr, path))
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

var _ = DescribeTable("a subcommand serves its endpoints against the API server and stops cleanly on SIGTERM",
	func(subcommand string, extraArgs ...string) {
		ports, portsErr := framework.FreePorts(3)
		Expect(portsErr).NotTo(HaveOccurred())
		metrics, probes, pprof := framework.LoopbackAddress(ports[0]), framework.LoopbackAddress(ports[1]), framework.LoopbackAddress(ports[2])
		out := gbytes.NewBuffer()
		args := []string{subcommand, "--kubeconfig", kubeconfig, "--metrics-bind-address", metrics, "--health-probe-bind-address", probes,
			"--pprof-bind-address", pprof}
		for _, a := range extraArgs {
			// The kubeconfig is written by BeforeSuite, after the entries are built.
			args = append(args, strings.ReplaceAll(a, "$KUBECONFIG", kubeconfig))
		}
		cmd := exec.Command(binary, args...)
		cmd.Stdout = io.MultiWriter(out, GinkgoWriter)
		cmd.Stderr = io.MultiWriter(out, GinkgoWriter)
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		DeferCleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
			}
		})

		for _, path := range []string{"/healthz", "/readyz"} {
			Eventually(func() (int, error) {
				code, _, err := get(probes, path)
				return code, err
			}).WithTimeout(30*time.Second).Should(Equal(http.StatusOK), path)
		}
		// The readiness check reports on the API server by name.
		Eventually(func() (string, error) {
			_, body, err := get(probes, "/readyz?verbose")
			return body, err
		}).Should(ContainSubstring("[+]apiserver ok"))

		// Metrics come from controller-runtime's registry and show it talked to the API server.
		Eventually(func() (string, error) {
			_, body, err := get(metrics, "/metrics")
			return body, err
		}).WithTimeout(30 * time.Second).Should(MatchRegexp(`rest_client_requests_total\{code="200"`))

		// Go's profiles, for profiling a running process (off unless the flag is given).
		Eventually(func() (string, error) {
			_, body, err := get(pprof, "/debug/pprof/")
			return body, err
		}).Should(ContainSubstring("goroutine"))

		Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		var err error
		Eventually(exited).WithTimeout(30 * time.Second).Should(Receive(&err))
		Expect(err).NotTo(HaveOccurred(), "exit status after SIGTERM")
		Expect(out).To(gbytes.Say("stopped"))

		// Nothing is left listening.
		_, _, err = get(probes, "/healthz")
		var opErr *net.OpError
		Expect(errors.As(err, &opErr)).To(BeTrue(), "probe endpoint still answers: %v", err)
	},
	Entry("manager", "manager"),
	// One API server plays both the hub and the managed cluster.
	Entry("agent", "agent", "--hub-kubeconfig", "$KUBECONFIG", "--cluster-name", "process-cluster"),
)

var _ = Describe("failing to reach the API server", func() {
	It("exits non-zero with a message that names the kubeconfig", func() {
		ports, err := framework.FreePorts(1)
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(binary, "manager", "--kubeconfig", "/nonexistent/kubeconfig",
			"--metrics-bind-address", "0", "--health-probe-bind-address", framework.LoopbackAddress(ports[0]))
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "want a non-zero exit, got %v", err)
		Expect(string(out)).To(ContainSubstring("loading kubeconfig /nonexistent/kubeconfig"))
	})
})
