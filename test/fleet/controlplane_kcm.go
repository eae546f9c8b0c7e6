package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// controllerManager is a kube-controller-manager process, built from the k8s.io/kubernetes
// module like kube-apiserver (hack/build-envtest.sh --with-controller-manager).
type controllerManager struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // the process' exit status, valid once done is closed
}

// startControllerManager runs kube-controller-manager against kubeconfig with only the
// given controllers. With csrsigning it signs approved CSRs of every Kubernetes signer
// (kubernetes.io/kube-apiserver-client is the one OCM uses) with the API server's client
// CA, so what it issues authenticates to that API server.
func startControllerManager(binary, kubeconfig string, ca *controlPlaneCA, controllers []string, logFile string) (*controllerManager, error) {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		// No pods run, so no per-controller service accounts: every controller uses the
		// admin kubeconfig.
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No HTTPS endpoint: nothing scrapes it, and it would need a port and a certificate.
		"--secure-port=0",
		"--bind-address=127.0.0.1",
	}
	if slices.Contains(controllers, "csrsigning") {
		args = append(args,
			"--cluster-signing-cert-file="+ca.CertFile(),
			"--cluster-signing-key-file="+ca.KeyFile(),
		)
	}
	log, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", logFile, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// If the test binary dies without calling Stop, the kernel kills the controller
	// manager too instead of leaving it running against a dead API server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("running %s: %w", binary, err), log.Close())
	}
	m := &controllerManager{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// exited reports the process' exit when it has ended early; nil while it runs.
func (m *controllerManager) exited() error {
	select {
	case <-m.done:
		return fmt.Errorf("kube-controller-manager exited (%v); see %s", m.err, m.log.Name())
	default:
		return nil
	}
}

// stop asks the process to terminate and kills it if it has not within 10 s.
func (m *controllerManager) stop() error {
	select {
	case <-m.done:
	default:
		if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("terminating kube-controller-manager: %w", err)
		}
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				return fmt.Errorf("killing kube-controller-manager: %w", err)
			}
			<-m.done
		}
	}
	return m.log.Close()
}
