package fleet

// Faults of the pull model's processes for chaos tests: manager replicas killed and
// started again, the leader among them, agents killed, and an agent's link to the hub cut
// (PullModelOptions.ManagerReplicas, AgentHubProxy; RestartExited in supervisor.go).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// managerLeaderElectionID is the manager's leader election Lease (pkg/hub/manager).
const managerLeaderElectionID = "argocd-pull-addon-manager"

// ManagerReplicas is how many manager replicas the model runs.
func (p *PullModel) ManagerReplicas() int { return len(p.managers) }

// ManagerLogs are the replicas' log files: manager.log, manager-1.log, ...
func (p *PullModel) ManagerLogs() []string {
	logs := make([]string, len(p.managers))
	for i, m := range p.managers {
		logs[i] = m.log
	}
	return logs
}

func (p *PullModel) replica(replica int) (*pullProcess, error) {
	if replica < 0 || replica >= len(p.managers) {
		return nil, fmt.Errorf("no manager replica %d (the model runs %d)", replica, len(p.managers))
	}
	return p.managers[replica], nil
}

// KillManager sends SIGKILL to manager replica and returns once it exited. It stays down
// until StartManager.
func (p *PullModel) KillManager(replica int) error {
	m, err := p.replica(replica)
	if err != nil {
		return err
	}
	return kill(p.take(m.key))
}

// StartManager starts manager replica again with its arguments and ports, its output
// appended to its log, and returns once it answers /readyz.
func (p *PullModel) StartManager(ctx context.Context, replica int) error {
	m, err := p.replica(replica)
	if err != nil {
		return err
	}
	p.mu.Lock()
	running := m.running()
	p.mu.Unlock()
	if running {
		return fmt.Errorf("manager replica %d is running already", replica)
	}
	proc, err := p.run(m, true)
	if err != nil {
		return err
	}
	timeout := p.opts.Timeout
	if deadline, ok := ctx.Deadline(); ok && timeout > 0 {
		timeout = min(timeout, time.Until(deadline))
	}
	return waitHTTP(proc, m.readyURL, timeout)
}

// ScrapeManagerMetricsOf reads manager replica's metrics as Prometheus would.
func (p *PullModel) ScrapeManagerMetricsOf(replica int) (framework.Metrics, error) {
	if _, err := p.replica(replica); err != nil {
		return nil, err
	}
	return framework.ScrapeMetricsAs(p.managerMetrics[replica], p.metricsToken)
}

// Leader is the replica that holds the leader election Lease, from each running replica's
// metric leader_election_master_status{name="argocd-pull-addon-manager"} == 1; -1 if none.
// Replicas that do not answer are skipped; their errors are returned only when no replica
// leads. Two replicas reporting the lead is an error.
func (p *PullModel) Leader() (int, error) {
	leader := -1
	var errs []error
	for i, m := range p.managers {
		p.mu.Lock()
		up := m.proc != nil && m.proc.exited() == nil
		p.mu.Unlock()
		if !up {
			continue
		}
		metrics, err := p.ScrapeManagerMetricsOf(i)
		if err != nil {
			errs = append(errs, fmt.Errorf("manager replica %d: %w", i, err))
			continue
		}
		if metrics.Value("leader_election_master_status", "name", managerLeaderElectionID) != 1 {
			continue
		}
		if leader >= 0 {
			return -1, fmt.Errorf("manager replicas %d and %d both report holding the leader election Lease", leader, i)
		}
		leader = i
	}
	if leader < 0 {
		return -1, errors.Join(errs...)
	}
	return leader, nil
}

// KillAgent sends SIGKILL to cluster's agent and returns once it exited. It stays down
// until StartAgent.
func (p *PullModel) KillAgent(cluster string) error {
	return kill(p.take(agentKey(cluster)))
}

// SetAgentHubLink cuts cluster's agent's link to the hub API server (every open
// connection closed, new ones refused) or restores it. It needs AgentHubProxy and the
// agent started once.
func (p *PullModel) SetAgentHubLink(cluster string, up bool) error {
	p.mu.Lock()
	proxy := p.hubProxies[cluster]
	p.mu.Unlock()
	if proxy == nil {
		return fmt.Errorf("the agent of %s has no hub proxy (PullModelOptions.AgentHubProxy, then StartAgent)", cluster)
	}
	proxy.SetDown(!up)
	return nil
}

// viaHubProxy points the hub kubeconfig file of cluster's agent at cluster's hub proxy,
// started at the agent's first start and kept across its restarts.
func (p *PullModel) viaHubProxy(cluster, kubeconfig string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	proxy := p.hubProxies[cluster]
	if proxy == nil {
		u, err := url.Parse(apiServerURL(p.Fleet.Hub.ControlPlane))
		if err != nil {
			return fmt.Errorf("parsing the hub API server's address: %w", err)
		}
		if proxy, err = framework.StartTCPProxy(u.Host); err != nil {
			return err
		}
		p.hubProxies[cluster] = proxy
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		return err
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("reading the hub kubeconfig of %s's agent: %w", cluster, err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + proxy.Addr()
	}
	if data, err = clientcmd.Write(*kc); err != nil {
		return fmt.Errorf("writing the hub kubeconfig of %s's agent: %w", cluster, err)
	}
	return os.WriteFile(kubeconfig, data, 0o600)
}
