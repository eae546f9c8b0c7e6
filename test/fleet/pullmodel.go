package fleet

// The pull model on the fleet: our own binary as real processes where the Deployments
// would run them.
//
//   - InstallPullModel renders the hub chart (charts/argocd-pull-integration) with the Helm
//     engine, applies it to the hub and starts `argocd-pull-addon manager` with a token of
//     the chart's ServiceAccount, so the chart's hub RBAC is what the manager gets.
//   - EnableAddon does what `clusteradm addon enable --names argocd-pull --clusters c
//     --namespace ns` does: a v1alpha1 ManagedClusterAddOn with spec.installNamespace.
//   - StartAgent waits for what OCM delivers to the cluster (the agent Deployment from the
//     addon's ManifestWork, the hub-kubeconfig Secret from addon registration) and starts
//     `argocd-pull-addon agent` with the Deployment's own arguments, the Secret's files as
//     the mounted hub kubeconfig directory, and a token of the agent's ServiceAccount on the
//     cluster, so the agent chart's RBAC on the cluster is what the agent gets.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

const (
	// PullAddonName is the addon `clusteradm addon enable --names` takes.
	PullAddonName = "argocd-pull"
	// PullAgentName is the agent's Deployment and ServiceAccount on a managed cluster.
	PullAgentName = "argocd-pull-agent"
	// PullAgentHubKubeconfigSecret is the Secret addon registration writes into the
	// agent's install namespace on the managed cluster.
	PullAgentHubKubeconfigSecret = "argocd-pull-hub-kubeconfig"
	// PullManagerServiceAccount is the chart's ServiceAccount of the manager.
	PullManagerServiceAccount = framework.ChartName + "-manager"
	// DefaultAddonInstallNamespace is where the agent goes when enable names no namespace.
	DefaultAddonInstallNamespace = "open-cluster-management-agent-addon"
)

// PullModelOptions configure InstallPullModel.
type PullModelOptions struct {
	// Binary is argocd-pull-addon; empty: $ARGOCD_PULL_ADDON_BINARY, or else it is built
	// with `go build` into the fleet's directory.
	Binary string
	// ChartValues are passed to the chart over its defaults.
	ChartValues map[string]any
	// ManagerArgs and AgentArgs are appended to the processes' arguments (e.g. --v=4).
	ManagerArgs []string
	AgentArgs   []string
	// Timeout bounds each wait (the manager's readiness, the agent's Deployment and
	// Secret); 0 means 2 minutes.
	Timeout time.Duration

	// For chaos tests (faults.go, supervisor.go); all off by default.
	//
	// ManagerReplicas is how many manager processes run, all with the same arguments and
	// the chart's --leader-elect, each with its own loopback metrics and probe ports; 0
	// means 1.
	ManagerReplicas int
	// AgentHubProxy makes each agent reach the hub API server through a loopback TCP
	// proxy of its own, which SetAgentHubLink cuts and restores.
	AgentHubProxy bool
	// RestartExited starts a manager replica or an agent that exited without the test
	// having killed or stopped it again after 2 s, as a kubelet restarts a crashed
	// container; Err does not report it and Restarts counts it.
	RestartExited bool
}

// PullModel is the hub chart installed on a fleet, the manager running, and the agents
// started so far.
type PullModel struct {
	Fleet *Fleet
	// Dir (under the fleet's directory) holds kubeconfigs and the processes' logs.
	Dir    string
	Binary string

	opts PullModelOptions
	// managers are the manager replicas; managerMetrics their metrics URLs. With the
	// chart's --metrics-secure they are https and scraped with metricsToken, a token of the
	// ServiceAccount the chart binds to its metrics-reader ClusterRole (withMetricsReader).
	managers       []*pullProcess
	managerMetrics []string
	metricsToken   string

	mu sync.Mutex
	// procs are the manager replicas and the agents started so far, by key ("manager-0",
	// "agent-cluster1"); see supervisor.go.
	procs map[string]*pullProcess
	// agentMetrics is each cluster's agent's metrics address (host:port).
	agentMetrics map[string]string
	// clusterAgentArgs are appended to one cluster's agent's arguments (SetAgentArgs).
	clusterAgentArgs map[string][]string
	// hubProxies are the agents' links to the hub with AgentHubProxy, by cluster.
	hubProxies map[string]*framework.TCPProxy
	// restarts counts the supervisor's restarts by key; stopping and stopCh tell it the
	// model stops; supervisor waits for its goroutines.
	restarts   map[string]int
	stopping   bool
	stopCh     chan struct{}
	supervisor sync.WaitGroup
}

// SetAgentArgs sets arguments appended to cluster's agent from its next start on, after
// the Deployment's and AgentArgs: the fleet gives each agent its cluster's Redis address
// (what Argo CD's argocd-redis Service is on a real cluster).
func (p *PullModel) SetAgentArgs(cluster string, args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clusterAgentArgs[cluster] = args
}

// InstallPullModel applies the hub chart to the fleet's hub (namespace argocd, created if
// missing) and starts the manager as the chart's ServiceAccount, returning once it is
// ready. Stop the returned PullModel.
func InstallPullModel(ctx context.Context, f *Fleet, opts PullModelOptions) (_ *PullModel, err error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.ManagerReplicas == 0 {
		opts.ManagerReplicas = 1
	}
	p := &PullModel{Fleet: f, Dir: filepath.Join(f.Dir, "pullmodel"), opts: opts, procs: map[string]*pullProcess{},
		agentMetrics: map[string]string{}, clusterAgentArgs: map[string][]string{}, hubProxies: map[string]*framework.TCPProxy{},
		restarts: map[string]int{}, stopCh: make(chan struct{})}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Stop())
		}
	}()
	if p.Binary, err = pullAddonBinary(opts.Binary, p.Dir); err != nil {
		return p, err
	}

	hub := f.Hub.APIServer.Client
	ns := framework.ChartNamespace
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return p, fmt.Errorf("creating namespace %s on the hub: %w", ns, err)
	}
	objs, err := framework.RenderChart(ns, withMetricsReader(opts.ChartValues))
	if err != nil {
		return p, err
	}
	// The manager runs as a process here: its Deployment would only sit unscheduled.
	var chartArgs []string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				return p, fmt.Errorf("reading the chart's manager Deployment: %w", err)
			}
			chartArgs = d.Spec.Template.Spec.Containers[0].Args[1:]
			continue
		}
		if err := hub.Create(ctx, o.DeepCopy()); err != nil {
			return p, fmt.Errorf("creating %s %s/%s from the chart: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	kubeconfig := filepath.Join(p.Dir, "manager.kubeconfig")
	if err := writeServiceAccountKubeconfig(ctx, f.Hub.ControlPlane, ns, PullManagerServiceAccount, kubeconfig); err != nil {
		return p, err
	}
	ports, err := framework.FreePorts(2 * opts.ManagerReplicas)
	if err != nil {
		return p, err
	}
	metricsScheme := "http"
	if slices.Contains(chartArgs, "--metrics-secure") {
		metricsScheme = "https"
		if p.metricsToken, err = metricsReaderToken(ctx, f.Hub.ControlPlane); err != nil {
			return p, err
		}
	}
	for i := range opts.ManagerReplicas {
		metrics, probes := framework.LoopbackAddress(ports[2*i]), framework.LoopbackAddress(ports[2*i+1])
		// The chart's arguments (so --gitopscluster-argocd-namespaces and the rest scope the manager as
		// in a pod), then loopback ports and the leader election namespace the pod would
		// have taken from its service account: a later flag overrides an earlier one.
		args := append([]string{"manager", "--kubeconfig", kubeconfig}, chartArgs...)
		args = append(args,
			"--leader-election-namespace", ns,
			"--metrics-bind-address", metrics, "--health-probe-bind-address", probes,
			"--agent-image", "quay.io/open-cluster-management/argocd-pull-addon:e2e",
			// A delivered Application the agent does not report is NotReportedError after
			// 15 s, not the default minute: scenarios see it without waiting that long.
			"--agent-report-grace-period", "15s",
		)
		args = append(args, opts.ManagerArgs...)
		p.managers = append(p.managers, &pullProcess{
			key: fmt.Sprintf("manager-%d", i), bin: p.Binary, component: "argocd-pull-addon-manager",
			log: p.managerLog(i), env: os.Environ(), args: args, readyURL: "http://" + probes + "/readyz",
		})
		p.managerMetrics = append(p.managerMetrics, metricsScheme+"://"+metrics+"/metrics")
	}
	// All replicas at once, as a Deployment's pods start; one wins the election.
	errs := make([]error, len(p.managers))
	var wg sync.WaitGroup
	for i, m := range p.managers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc, err := p.run(m, false)
			if err == nil {
				err = waitHTTP(proc, m.readyURL, opts.Timeout)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return p, errors.Join(errs...)
}

// ManagerMetricsURL is where manager replica 0 serves its metrics, for a scrape with
// another identity than ScrapeManagerMetrics'.
func (p *PullModel) ManagerMetricsURL() string { return p.managerMetrics[0] }

// ScrapeManagerMetrics reads the metrics of manager replica 0 as Prometheus would.
func (p *PullModel) ScrapeManagerMetrics() (framework.Metrics, error) {
	return p.ScrapeManagerMetricsOf(0)
}

// ServiceAccountToken is a day-long token of ServiceAccount namespace/name on cp, waiting
// for the ServiceAccount while it is still on its way (the agent's comes with its
// ManifestWork).
func (cp *ControlPlane) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	cs, err := kubernetes.NewForConfig(cp.APIServer.Config)
	if err != nil {
		return "", fmt.Errorf("creating a clientset for %s: %w", cp.Name, err)
	}
	var tr *authenticationv1.TokenRequest
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		tr, err = cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
			metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s on %s: %w", namespace, name, cp.Name, err)
	}
	return tr.Status.Token, nil
}

// AgentMetricsURL is where cluster's agent, when started, serves its Prometheus metrics.
func (p *PullModel) AgentMetricsURL(cluster string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "http://" + p.agentMetrics[cluster] + "/metrics"
}

// RefusedManagerRequests are the requests of the manager the hub's API server answered
// 403 Forbidden so far: none when the chart's RBAC grants all the manager does. Requests
// a restarted hub API server received before it was ready do not count
// (ControlPlane.APIServerStarting).
func (p *PullModel) RefusedManagerRequests() ([]string, error) {
	if p.Fleet.Hub.Audit == nil {
		return nil, errors.New("the hub API server keeps no audit log")
	}
	return p.Fleet.Hub.Audit.RefusedRequestsOutside(p.Fleet.Hub.APIServerStarting())
}

// ManagerLog is the log file of manager replica 0.
func (p *PullModel) ManagerLog() string { return p.managerLog(0) }

// managerLog is manager.log for replica 0, manager-<i>.log for the others.
func (p *PullModel) managerLog(replica int) string {
	if replica == 0 {
		return filepath.Join(p.Dir, "manager.log")
	}
	return filepath.Join(p.Dir, fmt.Sprintf("manager-%d.log", replica))
}

// AgentLog is the log file of cluster's agent.
func (p *PullModel) AgentLog(cluster string) string {
	return filepath.Join(p.Dir, "agent-"+cluster+".log")
}

// Err reports a manager replica or agent that exited on its own (without RestartExited;
// not one the test killed or stopped), and failed OCM components.
func (p *PullModel) Err() error {
	return errors.Join(append(p.procErrs(), p.Fleet.Err())...)
}

// EnableAddon does what `clusteradm addon enable --names argocd-pull --clusters cluster
// --namespace installNamespace` does: it creates the ManagedClusterAddOn argocd-pull in the
// cluster's namespace with spec.installNamespace (empty: the default namespace).
func (p *PullModel) EnableAddon(ctx context.Context, cluster, installNamespace string) error {
	if installNamespace == "" {
		installNamespace = DefaultAddonInstallNamespace
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: PullAddonName, Namespace: cluster},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNamespace},
	}
	if err := p.Fleet.Hub.APIServer.Client.Create(ctx, mca); err != nil {
		return fmt.Errorf("enabling %s on %s: %w", PullAddonName, cluster, err)
	}
	return nil
}

// StartAgent waits until the agent Deployment and its hub-kubeconfig Secret exist in
// installNamespace (empty: the default) on cluster and starts the agent with the
// Deployment's container arguments: --hub-kubeconfig points at a directory holding the
// Secret's files (as the Deployment mounts it), --kubeconfig at a token of the agent's
// ServiceAccount, the probe and metrics ports are free loopback ports. It returns once the
// agent serves /healthz.
func (p *PullModel) StartAgent(ctx context.Context, cluster, installNamespace string) error {
	if installNamespace == "" {
		installNamespace = DefaultAddonInstallNamespace
	}
	c := p.Fleet.Cluster(cluster)
	if c == nil {
		return fmt.Errorf("no cluster %s in the fleet", cluster)
	}
	p.mu.Lock()
	running := p.procs[agentKey(cluster)].running()
	p.mu.Unlock()
	if running {
		return fmt.Errorf("the agent of %s is running already", cluster)
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()

	spoke := c.APIServer.Client
	dep := &appsv1.Deployment{}
	secret := &corev1.Secret{}
	var lastErr error
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := p.Err(); err != nil {
			return false, err
		}
		if lastErr = spoke.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: PullAgentName}, dep); lastErr != nil {
			return false, client.IgnoreNotFound(lastErr)
		}
		if lastErr = spoke.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: PullAgentHubKubeconfigSecret}, secret); lastErr != nil {
			return false, client.IgnoreNotFound(lastErr)
		}
		if len(secret.Data["kubeconfig"]) == 0 || len(secret.Data["tls.crt"]) == 0 {
			lastErr = fmt.Errorf("secret %s/%s has no kubeconfig or no certificate yet", installNamespace, PullAgentHubKubeconfigSecret)
			return false, nil
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("waiting for the agent Deployment and Secret %s in %s/%s: %w (last: %v)", PullAgentHubKubeconfigSecret, cluster, installNamespace, err, lastErr)
	}

	var container *corev1.Container
	for i := range dep.Spec.Template.Spec.Containers {
		if dep.Spec.Template.Spec.Containers[i].Name == "agent" {
			container = &dep.Spec.Template.Spec.Containers[i]
		}
	}
	if container == nil {
		return fmt.Errorf("deployment %s/%s on %s has no container agent", installNamespace, PullAgentName, cluster)
	}

	dir := filepath.Join(p.Dir, cluster+"-agent")
	hubDir := filepath.Join(dir, "hub-kubeconfig")
	if err := os.MkdirAll(hubDir, 0o700); err != nil {
		return err
	}
	for name, data := range secret.Data {
		if err := os.WriteFile(filepath.Join(hubDir, name), data, 0o600); err != nil {
			return err
		}
	}
	if p.opts.AgentHubProxy {
		if err := p.viaHubProxy(cluster, filepath.Join(hubDir, "kubeconfig")); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	saName := dep.Spec.Template.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	if err := writeServiceAccountKubeconfig(ctx, c.ControlPlane, installNamespace, saName, kubeconfig); err != nil {
		return err
	}
	ports, err := framework.FreePorts(2)
	if err != nil {
		return err
	}
	args := []string{}
	for _, a := range append(append([]string{}, container.Command...), container.Args...) {
		switch {
		case strings.HasPrefix(a, "--hub-kubeconfig"),
			strings.HasPrefix(a, "--kubeconfig"),
			strings.HasPrefix(a, "--health-probe-bind-address"),
			strings.HasPrefix(a, "--metrics-bind-address"):
			continue
		}
		args = append(args, a)
	}
	args = append(args,
		"--hub-kubeconfig", filepath.Join(hubDir, "kubeconfig"),
		"--kubeconfig", kubeconfig,
		"--health-probe-bind-address", framework.LoopbackAddress(ports[1]),
		"--metrics-bind-address", framework.LoopbackAddress(ports[0]),
	)
	args = append(args, p.opts.AgentArgs...)
	p.mu.Lock()
	args = append(args, p.clusterAgentArgs[cluster]...)
	p.mu.Unlock()
	env := os.Environ()
	for _, e := range container.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	// Append to the log of an earlier run of the same agent: a restart keeps its history.
	logPath := p.AgentLog(cluster)
	if old, err := os.ReadFile(logPath); err == nil {
		_ = os.WriteFile(logPath+".previous", old, 0o600)
	}
	p.mu.Lock()
	p.agentMetrics[cluster] = framework.LoopbackAddress(ports[0])
	p.mu.Unlock()
	agent := &pullProcess{
		key: agentKey(cluster), bin: p.Binary, component: "argocd-pull-addon-agent-" + cluster,
		log: logPath, env: env, args: args, readyURL: "http://" + framework.LoopbackAddress(ports[1]) + "/healthz",
	}
	proc, err := p.run(agent, false)
	if err != nil {
		return err
	}
	return waitHTTP(proc, agent.readyURL, p.opts.Timeout)
}

// agentKey names cluster's agent in Restarts.
func agentKey(cluster string) string { return "agent-" + cluster }

// StopAgent stops cluster's agent (SIGTERM) if it runs.
func (p *PullModel) StopAgent(cluster string) error {
	proc := p.take(agentKey(cluster))
	if proc == nil {
		return nil
	}
	return proc.stop()
}

// Stop stops the agents, then the manager replicas, and the agents' hub proxies. The
// fleet is left running.
func (p *PullModel) Stop() error {
	if p == nil {
		return nil
	}
	return p.stopAll()
}

// pullAddonBinary is bin, else $ARGOCD_PULL_ADDON_BINARY, else a fresh `go build` of
// ./cmd/argocd-pull-addon into dir.
func pullAddonBinary(bin, dir string) (string, error) {
	if bin == "" {
		bin = os.Getenv("ARGOCD_PULL_ADDON_BINARY")
	}
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("argocd-pull-addon binary: %w", err)
		}
		return bin, nil
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	bin = filepath.Join(dir, "argocd-pull-addon")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/argocd-pull-addon")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building argocd-pull-addon: %w\n%s", err, out)
	}
	return bin, nil
}

// writeServiceAccountKubeconfig writes a kubeconfig for namespace/name on cp with a token
// from the TokenRequest API, as a pod of that ServiceAccount would get mounted.
func writeServiceAccountKubeconfig(ctx context.Context, cp *ControlPlane, namespace, name, file string) error {
	token, err := cp.ServiceAccountToken(ctx, namespace, name)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cp.Name] = &clientcmdapi.Cluster{Server: apiServerURL(cp), CertificateAuthorityData: cp.APIServer.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: cp.Name, AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}
