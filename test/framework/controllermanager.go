package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ControllerManager is a kube-controller-manager process, built from the k8s.io/kubernetes
// module like kube-apiserver (hack/build-envtest.sh --with-controller-manager): the fleet's
// garbage collection, namespace deletion and CSR signing, and Kubernetes' aggregation of
// ClusterRoles (clusterrole-aggregation) where a suite checks what view, edit and admin
// grant.
type ControllerManager struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // the process' exit status, valid once done is closed
}

// ControllerManagerOptions say what StartControllerManager runs.
type ControllerManagerOptions struct {
	// Kubeconfig is an admin kubeconfig of the API server.
	Kubeconfig string
	// Controllers are the only controllers run (--controllers).
	Controllers []string
	// SigningCertFile and SigningKeyFile, with csrsigning among Controllers, are the CA
	// that signs approved CSRs of every Kubernetes signer
	// (kubernetes.io/kube-apiserver-client is the one OCM uses): the API server's client
	// CA, so what it issues authenticates to that API server.
	SigningCertFile, SigningKeyFile string
	// LogFile receives the process's output.
	LogFile string
}

// ControllerManagerBinary is kube-controller-manager in the assets directory (AssetsDir),
// or an error saying how to build it.
func ControllerManagerBinary() (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(binary); err != nil {
		return "", fmt.Errorf("no kube-controller-manager in %s: run `hack/build-envtest.sh --with-controller-manager` (or `make test-fleet-smoke`): %w", assets, err)
	}
	return binary, nil
}

// StartControllerManager runs kube-controller-manager (ControllerManagerBinary) with
// opts. Stop it.
func StartControllerManager(opts ControllerManagerOptions) (*ControllerManager, error) {
	binary, err := ControllerManagerBinary()
	if err != nil {
		return nil, err
	}
	kubeconfig, controllers, logFile := opts.Kubeconfig, opts.Controllers, opts.LogFile
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
			"--cluster-signing-cert-file="+opts.SigningCertFile,
			"--cluster-signing-key-file="+opts.SigningKeyFile,
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
	m := &ControllerManager{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// Exited reports the process' exit when it has ended early; nil while it runs.
func (m *ControllerManager) Exited() error {
	select {
	case <-m.done:
		return fmt.Errorf("kube-controller-manager exited (%v); see %s", m.err, m.log.Name())
	default:
		return nil
	}
}

// LogFile is the process's output, to read when a test fails.
func (m *ControllerManager) LogFile() string { return m.log.Name() }

// Stop asks the process to terminate and kills it if it has not within 10 s.
func (m *ControllerManager) Stop() error {
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
