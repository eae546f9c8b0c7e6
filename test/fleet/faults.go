package fleet

// Faults of a control plane for chaos tests: its kube-apiserver goes away and comes back
// on the same etcd, with the same certificates, as a static pod of a real control plane
// restarts.
//
// envtest's APIServer.Stop/Start would generate new certificates (and a new admin user),
// which every kubeconfig of the fleet would no longer trust. Instead StopAPIServer finds
// the process envtest started (a child of the test process: the kube-apiserver with this
// control plane's --secure-port), remembers its command line, environment and working
// directory and signals it; StartAPIServer runs that command line again. envtest's own
// Stop skips a process that has exited, so ControlPlane.Stop stops the restarted one first.
//
// What a 20 s outage of the hub's kube-apiserver does to the rest of a pull fleet (seen in
// test/fleet/faults_test): kube-controller-manager (--leader-elect=false), OCM's hub
// controllers and klusterlet agents in the test process, the applicationset-controller and
// the agents keep running (some log connection errors) and no Err reports them; the
// standby manager replica keeps trying to acquire the lease; the leading one exits with
// "leader election lost" (its renew deadline is 10 s), which PullModelOptions.RestartExited
// restarts; right after the restart the server refuses requests until its RBAC informers
// have synced (see APIServerStarting).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// apiServerCommand is how a control plane's kube-apiserver runs: envtest's command line,
// as StopAPIServer found it, and the restarted process if StartAPIServer ran it.
type apiServerCommand struct {
	args []string // argv, args[0] the binary
	env  []string
	dir  string
	// pid is envtest's process until it is stopped; restarted is ours after a restart.
	pid       int
	restarted *exec.Cmd
	done      chan struct{} // closed when restarted has exited
	log       *os.File
	// starting are the spans from each restart to the server's readiness.
	starting []framework.TimeRange
}

// StopAPIServer stops this control plane's kube-apiserver (SIGTERM, SIGKILL after 10 s);
// etcd and everything else keep running.
func (cp *ControlPlane) StopAPIServer() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api == nil {
		found, err := findAPIServerProcess(cp)
		if err != nil {
			return err
		}
		cp.api = found
	}
	if cp.api.restarted != nil {
		return cp.api.stopRestarted()
	}
	if cp.api.pid == 0 {
		return fmt.Errorf("the %s API server is stopped already", cp.Name)
	}
	pid := cp.api.pid
	cp.api.pid = 0
	return stopPid(pid, "kube-apiserver of "+cp.Name)
}

// StartAPIServer starts it again with the same binary, arguments, certificates and etcd
// and returns once /readyz answers 200.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api == nil || cp.api.pid != 0 || cp.api.restarted != nil {
		return fmt.Errorf("the %s API server was not stopped with StopAPIServer", cp.Name)
	}
	logPath := filepath.Join(cp.dir, "kube-apiserver.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening %s: %w", logPath, err)
	}
	cmd := exec.Command(cp.api.args[0], cp.api.args[1:]...)
	cmd.Env, cmd.Dir = cp.api.env, cp.api.dir
	cmd.Stdout, cmd.Stderr = log, log
	// As envtest: its own process group; and killed with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("restarting the %s API server: %w", cp.Name, err), log.Close())
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	cp.api.restarted, cp.api.done, cp.api.log = cmd, done, log
	err = waitAPIServerReady(ctx, cp, done)
	cp.api.starting = append(cp.api.starting, framework.TimeRange{From: started, To: time.Now()})
	if err != nil {
		return fmt.Errorf("%w; see %s", err, logPath)
	}
	return nil
}

// APIServerStarting are the times StartAPIServer waited for the restarted kube-apiserver
// to be ready. Until its RBAC informers have synced it refuses requests it would allow
// (even discovery), which no Service would send it in a real cluster: see
// framework.AuditLog.RefusedRequestsOutside.
func (cp *ControlPlane) APIServerStarting() []framework.TimeRange {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api == nil {
		return nil
	}
	return slices.Clone(cp.api.starting)
}

// stopAPIServerRestart stops the API server StartAPIServer started, if any: envtest's
// Stop does not know it.
func (cp *ControlPlane) stopAPIServerRestart() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if cp.api == nil || cp.api.restarted == nil {
		return nil
	}
	return cp.api.stopRestarted()
}

// stopRestarted stops the restarted process: SIGTERM, SIGKILL after 10 s.
func (c *apiServerCommand) stopRestarted() error {
	cmd, done := c.restarted, c.done
	c.restarted, c.done = nil, nil
	defer c.log.Close()
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("terminating the restarted kube-apiserver: %w", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// waitAPIServerReady polls the API server's /readyz with the admin credentials until it
// answers 200, failing early when the process exits.
func waitAPIServerReady(ctx context.Context, cp *ControlPlane, done <-chan struct{}) error {
	hc, err := rest.HTTPClientFor(cp.APIServer.Config)
	if err != nil {
		return fmt.Errorf("creating an HTTP client for the %s API server: %w", cp.Name, err)
	}
	hc.Timeout = 5 * time.Second
	ready := strings.TrimSuffix(apiServerURL(cp), "/") + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the restarted %s API server exited", cp.Name)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%s: %s", ready, resp.Status)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %s API server to be ready: %w (last: %v)", cp.Name, err, last)
	}
	return nil
}

// findAPIServerProcess finds envtest's kube-apiserver of cp: a child of this process whose
// command line has cp's --secure-port.
func findAPIServerProcess(cp *ControlPlane) (*apiServerCommand, error) {
	u, err := url.Parse(apiServerURL(cp))
	if err != nil {
		return nil, fmt.Errorf("parsing the %s API server's address: %w", cp.Name, err)
	}
	portArg := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || procParent(pid) != self {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" || !slices.Contains(args[1:], portArg) {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			return nil, fmt.Errorf("reading the environment of kube-apiserver %d: %w", pid, err)
		}
		dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			return nil, fmt.Errorf("reading the working directory of kube-apiserver %d: %w", pid, err)
		}
		var env []string
		for _, kv := range bytes.Split(bytes.TrimRight(environ, "\x00"), []byte{0}) {
			env = append(env, string(kv))
		}
		return &apiServerCommand{args: args, env: env, dir: dir, pid: pid}, nil
	}
	return nil, fmt.Errorf("no kube-apiserver child of this process has %s (the %s API server)", portArg, cp.Name)
}

// procParent is pid's parent process id, 0 if it cannot be read.
func procParent(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// procGone reports whether pid has exited (gone, or a zombie not reaped yet).
func procGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// stopPid terminates a process another goroutine waits for (envtest reaps its API
// server): SIGTERM, SIGKILL after 10 s, and returns once it has exited.
func stopPid(pid int, what string) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("terminating %s (pid %d): %w", what, pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !procGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(time.Minute)
			for !procGone(pid) {
				if time.Now().After(deadline) {
					return fmt.Errorf("%s (pid %d) still runs a minute after SIGKILL", what, pid)
				}
				time.Sleep(50 * time.Millisecond)
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
