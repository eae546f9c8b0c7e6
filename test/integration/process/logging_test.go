package process_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// jsonLines parses out as one JSON object a line, failing on any line that is not one.
func jsonLines(out []byte) []map[string]any {
	GinkgoHelper()
	var lines []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(out))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		if len(bytes.TrimSpace(scanner.Bytes())) == 0 {
			continue
		}
		var line map[string]any
		Expect(json.Unmarshal(scanner.Bytes(), &line)).To(Succeed(), "not a JSON line: %s", scanner.Text())
		lines = append(lines, line)
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
	return lines
}

var _ = DescribeTable("--logging-format=json: every line the process logs is a JSON object, controller-runtime's included",
	func(subcommand string, extraArgs ...string) {
		ports, err := framework.FreePorts(1)
		Expect(err).NotTo(HaveOccurred())
		probes := framework.LoopbackAddress(ports[0])
		args := append([]string{subcommand, "--logging-format=json", "--kubeconfig", kubeconfig,
			"--metrics-bind-address", "0", "--health-probe-bind-address", probes}, extraArgs...)
		for i, a := range args {
			if a == "$KUBECONFIG" {
				args[i] = kubeconfig
			}
		}
		// gbytes buffers: the test reads stderr while the process writes it.
		stdout, stderr := gbytes.NewBuffer(), gbytes.NewBuffer()
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		DeferCleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
			}
		})
		Eventually(func() (int, error) {
			code, _, err := get(probes, "/readyz")
			return code, err
		}).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
		// Ready comes before the controllers start (the manager's after it wins its
		// election): stop it once a controller has logged that it started.
		Eventually(stderr).WithTimeout(30 * time.Second).Should(gbytes.Say("Starting workers"))
		Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(exited).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		GinkgoWriter.Printf("stderr:\n%s\n", stderr.Contents())

		Expect(string(stdout.Contents())).To(BeEmpty(), "logs go to stderr, as in text format")
		lines := jsonLines(stderr.Contents())
		Expect(lines).NotTo(BeEmpty())
		for _, line := range lines {
			Expect(line).To(HaveKey("ts"))
			Expect(line).To(HaveKey("msg"))
		}
		// controller-runtime's own log line, with its structured key: it logs through klog.
		Expect(lines).To(ContainElement(And(HaveKeyWithValue("msg", "Starting workers"), HaveKey("controller"))))
	},
	Entry("manager", "manager"),
	Entry("agent", "agent", "--hub-kubeconfig", "$KUBECONFIG", "--cluster-name", "logging-cluster"),
)

var _ = Describe("an unknown --logging-format", func() {
	It("is refused before anything starts, naming the flag", func() {
		cmd := exec.Command(binary, "manager", "--logging-format=logfmt", "--kubeconfig", kubeconfig,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "want a non-zero exit, got %v: %s", err, out)
		Expect(string(out)).To(ContainSubstring(`"logfmt": Unsupported log format`))
		Expect(string(out)).NotTo(ContainSubstring("Starting"))
	})
})
