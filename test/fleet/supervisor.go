package fleet

// The pull model's processes (manager replicas, agents) as a kubelet runs containers:
// each is a pullProcess that knows how to start itself again. With
// PullModelOptions.RestartExited a process that exits without the test having killed or
// stopped it (the manager exits on "leader election lost" while the hub API server is
// down) is started again after restartDelay, retrying until it is up, and counted in
// Restarts. A process the test killed (KillManager, KillAgent, StopAgent) stays down until
// the test starts it (StartManager, StartAgent).

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// restartDelay is how long the supervisor waits before starting an exited process again
// (a kubelet's first crash-loop back-off is 10 s; chaos runs want it shorter).
const restartDelay = 2 * time.Second

// pullProcess is one process of the pull model and how to start it again.
type pullProcess struct {
	// key names it in Restarts: "manager-0", "agent-cluster1".
	key       string
	bin       string
	component string
	log       string
	env, args []string
	// readyURL answers 200 once the process is up (/readyz, /healthz).
	readyURL string

	// Guarded by PullModel.mu. proc is nil while the process is down by the test's will
	// (not started yet, killed, stopped); restarting while it exited on its own and the
	// supervisor is starting it again.
	proc       *argoCDProcess
	restarting bool
}

// running reports whether pp runs or is being restarted. Callers hold PullModel.mu.
func (pp *pullProcess) running() bool {
	return pp != nil && pp.proc != nil && (pp.restarting || pp.proc.exited() == nil)
}

// start runs pp's command, its output appended to its log when appendLog (a restart keeps
// the history) or into a fresh log.
func (pp *pullProcess) start(appendLog bool) (*argoCDProcess, error) {
	if !appendLog {
		return startArgoCDProcess(pp.bin, pp.component, pp.log, pp.env, pp.args)
	}
	logFile, err := os.OpenFile(pp.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "\n---- %s started again at %s ----\n", pp.key, time.Now().UTC().Format(time.RFC3339Nano))
	return runArgoCDProcess(pp.bin, pp.component, logFile, pp.env, pp.args)
}

// run starts pp and, with RestartExited, supervises it.
func (p *PullModel) run(pp *pullProcess, appendLog bool) (*argoCDProcess, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, fmt.Errorf("starting %s: the pull model is stopping", pp.key)
	}
	proc, err := pp.start(appendLog)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", pp.key, err)
	}
	p.procs[pp.key] = pp
	pp.proc, pp.restarting = proc, false
	if p.opts.RestartExited {
		p.supervisor.Add(1)
		go p.supervise(pp, proc)
	}
	return proc, nil
}

// supervise waits for proc, pp's current process, to exit and starts pp again if it
// exited on its own, until the test takes pp over or the model stops.
func (p *PullModel) supervise(pp *pullProcess, proc *argoCDProcess) {
	defer p.supervisor.Done()
	for proc != nil {
		select {
		case <-proc.done:
		case <-p.stopCh:
			return
		}
		proc = p.restart(pp, proc)
	}
}

// restart starts pp again after proc exited on its own, retrying every restartDelay until
// a process is up, and returns it; nil once the test killed, stopped or started pp itself,
// or the model stops.
func (p *PullModel) restart(pp *pullProcess, proc *argoCDProcess) *argoCDProcess {
	for {
		p.mu.Lock()
		if p.stopping || pp.proc != proc {
			p.mu.Unlock()
			return nil
		}
		pp.restarting = true
		p.mu.Unlock()

		select {
		case <-time.After(restartDelay):
		case <-p.stopCh:
			return nil
		}

		p.mu.Lock()
		if p.stopping || pp.proc != proc {
			p.mu.Unlock()
			return nil
		}
		next, err := pp.start(true)
		if err != nil {
			// Nothing started: try again after the delay.
			p.mu.Unlock()
			continue
		}
		pp.proc = next
		p.mu.Unlock()

		if !waitUp(next, pp.readyURL, p.stopCh) {
			proc = next // exited (or the model stops): the next round sees which
			continue
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if pp.proc != next {
			return nil
		}
		pp.restarting = false
		p.restarts[pp.key]++
		return next
	}
}

// waitUp polls url until it answers 200 (true), proc exits or stop closes (false).
func waitUp(proc *argoCDProcess, url string, stop <-chan struct{}) bool {
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-proc.done:
			return false
		case <-stop:
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// take marks the process under key down by the test's will and returns its process to
// kill or stop (nil if none runs).
func (p *PullModel) take(key string) *argoCDProcess {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.procs[key]
	if pp == nil {
		return nil
	}
	proc := pp.proc
	pp.proc, pp.restarting = nil, false
	return proc
}

// kill sends SIGKILL to proc's process group and waits for it to exit.
func kill(proc *argoCDProcess) error {
	if proc == nil {
		return nil
	}
	if err := syscall.Kill(-proc.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", proc.name, err)
	}
	<-proc.done
	return nil
}

// Restarts is how many times the supervisor restarted each process ("manager-0",
// "agent-cluster1", ...).
func (p *PullModel) Restarts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.restarts))
	for k, v := range p.restarts {
		out[k] = v
	}
	return out
}

// procErrs are the exits of processes that ended on their own: none with RestartExited,
// where the supervisor starts them again.
func (p *PullModel) procErrs() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.RestartExited {
		return nil
	}
	var errs []error
	for _, pp := range p.procs {
		if pp.proc != nil {
			errs = append(errs, pp.proc.exited())
		}
	}
	return errs
}

// stopAll stops every process and the supervisor, and closes the agents' hub proxies.
func (p *PullModel) stopAll() error {
	p.mu.Lock()
	var procs []*argoCDProcess
	if !p.stopping {
		p.stopping = true
		close(p.stopCh)
	}
	// Agents first, then the manager replicas, as before replicas.
	for _, pp := range p.procs {
		if pp.proc != nil && strings.HasPrefix(pp.key, "agent-") {
			procs = append(procs, pp.proc)
			pp.proc = nil
		}
	}
	for _, pp := range p.managers {
		if pp.proc != nil {
			procs = append(procs, pp.proc)
			pp.proc = nil
		}
	}
	proxies := p.hubProxies
	p.hubProxies = map[string]*framework.TCPProxy{}
	p.mu.Unlock()
	var errs []error
	for _, proc := range procs {
		errs = append(errs, proc.stop())
	}
	p.supervisor.Wait()
	for _, proxy := range proxies {
		proxy.Close()
	}
	return errors.Join(errs...)
}
