package fleet

// Real Argo CD for the fleet: the components of Argo CD v3 (built by `make argocd` from
// hack/argocd into bin/argocd/argocd, one multi-call binary) run as processes of the test
// against envtest API servers.
//
//   - StartArgoCD, on each managed cluster: redis (Debian's redis-server, argocd_redis.go),
//     a repo-server and an application-controller. The controller's destination
//     https://kubernetes.default.svc reaches the cluster's own API server through
//     ARGOCD_FAKE_IN_CLUSTER=true and KUBECONFIG.
//   - StartArgoCDApplicationSetController, on the hub.
//   - StartArgoCDServer, the API server on the hub (argocd_server.go).
//   - A Config Management Plugin sidecar next to a repo-server (ArgoCDOptions.CMP,
//     argocd_cmp.go), for Argo CD on the hub rendering hub-rendered Applications.
//
// Every server listens on 127.0.0.1 except the application-controller's metrics listener,
// which binds all interfaces and has no flag to change that: run the test binary inside a
// private network namespace (see netns.go, `make test-argocd-smoke`).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// ArgoCDNamespace is where the harness runs Argo CD unless told otherwise.
const ArgoCDNamespace = "argocd"

// ArgoCDOptions configure StartArgoCD.
type ArgoCDOptions struct {
	// APIServer is the cluster Argo CD runs on and deploys to. Required.
	APIServer *framework.APIServer
	// KubeconfigFile is an admin kubeconfig of APIServer for the components (default: the
	// one envtest generated, written into Dir). A fleet ControlPlane passes its own.
	KubeconfigFile string
	// Name tells this cluster's logs apart (default "argocd").
	Name string
	// Dir holds the kubeconfig, logs and scratch directories (default: a new temporary
	// directory, removed by Stop unless KeepDir).
	Dir     string
	KeepDir bool
	// Namespace Argo CD runs in and reads Applications from (default "argocd").
	Namespace string
	// Binary is the multi-call binary (default bin/argocd/argocd of the repository).
	Binary string
	// AppResync is the controller's periodic refresh (--app-resync) and how long the
	// repo-server caches the commit a branch resolves to (--revision-cache-expiration):
	// a new commit is applied within about twice this. Default 10s (Argo CD: 120s, 3m).
	AppResync time.Duration
	// LogLevel of the components (default "info").
	LogLevel string
	// SkipCRDs leaves the installed Argo CD CRDs alone. By default Argo CD v3.2.11's CRDs
	// (from the module hack/argocd pins) are installed over whatever is there.
	SkipCRDs bool
	// ExtraEnv is added to every component's environment.
	ExtraEnv []string
	// ControllerArgs and RepoServerArgs are appended to the components' flags (e.g.
	// --persist-resource-health, to get each resource's health into the Application).
	ControllerArgs []string
	RepoServerArgs []string
	// CMP, when set, runs a Config Management Plugin sidecar next to the repo-server
	// (argocd_cmp.go).
	CMP *ArgoCDCMPOptions
	// ArgoCDConfig is merged into argocd-cm before the components start, e.g. a
	// resource.customizations.health.* entry.
	ArgoCDConfig map[string]string
	// AllowHostNetwork lets StartArgoCD run outside a private network namespace, where the
	// controller's metrics port is open on every interface of the machine.
	AllowHostNetwork bool
}

// ArgoCD is the Argo CD of one cluster: redis, a repo-server and an
// application-controller.
type ArgoCD struct {
	Name      string
	Namespace string
	Dir       string
	// Kubeconfig is the file the components use (admin of the API server).
	Kubeconfig string
	// RedisAddr, RepoServerAddr and ControllerMetricsAddr are host:port on 127.0.0.1.
	RedisAddr string
	// RedisPassword is redis' password, also in the argocd-redis Secret (key auth).
	RedisPassword         string
	RepoServerAddr        string
	ControllerMetricsAddr string
	// ServerAddr is where argocd-server listens (StartArgoCDServer; argocd_server.go).
	ServerAddr string

	procs   []*argoCDProcess
	keepDir bool
	ownsDir bool
}

// StartArgoCD prepares the namespace (argocd-cm, argocd-secret, the default AppProject),
// installs Argo CD v3's CRDs, merges ArgoCDConfig into argocd-cm and starts redis, the
// CMP sidecar when asked, the repo-server and the application-controller, waiting until
// each is healthy. On error everything started is
// stopped again.
func StartArgoCD(opts ArgoCDOptions) (_ *ArgoCD, err error) {
	if opts.APIServer == nil {
		return nil, errors.New("StartArgoCD: no APIServer")
	}
	if !opts.AllowHostNetwork && !InPrivateNetNS() {
		return nil, errors.New("StartArgoCD: not in a private network namespace (the application-controller " +
			"would listen on all interfaces): use fleet.RunInPrivateNetNS in TestMain or run under `unshare --net`")
	}
	a := &ArgoCD{Name: opts.Name, Namespace: opts.Namespace, Dir: opts.Dir, keepDir: opts.KeepDir}
	if a.Name == "" {
		a.Name = "argocd"
	}
	if a.Namespace == "" {
		a.Namespace = ArgoCDNamespace
	}
	bin, err := argoCDBinaryOr(opts.Binary)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	if err := a.prepare(opts.APIServer, opts.KubeconfigFile, "argocd-"+a.Name+"-", opts.SkipCRDs); err != nil {
		return nil, err
	}
	if len(opts.ArgoCDConfig) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := MergeArgoCDConfig(ctx, opts.APIServer.Client, a.Namespace, opts.ArgoCDConfig); err != nil {
			return nil, err
		}
	}
	resync := opts.AppResync
	if resync == 0 {
		resync = 10 * time.Second
	}
	logLevel := opts.LogLevel
	if logLevel == "" {
		logLevel = "info"
	}
	ports, err := framework.FreePorts(4)
	if err != nil {
		return nil, err
	}
	a.RedisAddr = framework.LoopbackAddress(ports[0])
	a.RepoServerAddr = framework.LoopbackAddress(ports[1])
	repoMetrics := framework.LoopbackAddress(ports[2])
	a.ControllerMetricsAddr = framework.LoopbackAddress(ports[3])
	env := a.env(bin, opts.ExtraEnv)

	// redis: Debian's redis-server with a password, as Argo CD's installation runs it,
	// the password in the argocd-redis Secret (key auth) and in every component's
	// REDIS_PASSWORD. In memory only, on loopback.
	if err := a.startRedis(opts.APIServer.Client, ports[0]); err != nil {
		return nil, err
	}
	env = append(env, "REDIS_PASSWORD="+a.RedisPassword)

	// repo-server: plaintext gRPC on loopback, metrics on loopback, its own TMPDIR (it
	// wipes $TMPDIR/_argocd-repo at start, which several repo-servers must not share) and
	// its own git askpass socket (by default /tmp/reposerver-ask-pass.sock, which two
	// repo-servers starting at once both remove and bind).
	repoTmp := a.mkdir("repo-server-tmp")
	repoEnv := append(append([]string{}, env...), "TMPDIR="+repoTmp, "ARGOCD_ASK_PASS_SOCK="+filepath.Join(repoTmp, "askpass.sock"))
	if opts.CMP != nil {
		// The sidecar first: the repo-server looks for plugin sockets when it renders.
		socketDir, err := a.startCMPServer(bin, env, logLevel, *opts.CMP)
		if err != nil {
			return nil, err
		}
		repoEnv = append(repoEnv, "ARGOCD_PLUGINSOCKFILEPATH="+socketDir)
	}
	repoArgs := []string{
		"--address", "127.0.0.1", "--port", strconv.Itoa(ports[1]),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[2]),
		"--disable-tls", "--redis", a.RedisAddr, "--loglevel", logLevel, "--logformat", "text",
		// How long a branch's resolved commit is cached (Argo CD: the reconciliation
		// timeout, 3m); without this a new commit is seen only minutes later.
		"--revision-cache-expiration", resync.String(),
	}
	repo, err := a.start(bin, "argocd-repo-server", repoEnv, append(repoArgs, opts.RepoServerArgs...)...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(repo, "http://"+repoMetrics+"/healthz", 2*time.Minute); err != nil {
		return nil, err
	}

	// application-controller: its metrics listener binds 0.0.0.0:<port> (no flag), hence
	// the private network namespace.
	ctrlEnv := append(append([]string{}, env...), "TMPDIR="+a.mkdir("controller-tmp"))
	ctrlArgs := []string{
		"--kubeconfig", a.Kubeconfig, "--namespace", a.Namespace,
		"--repo-server", a.RepoServerAddr, "--repo-server-plaintext",
		"--redis", a.RedisAddr, "--metrics-port", strconv.Itoa(ports[3]),
		"--app-resync", strconv.Itoa(int(resync.Seconds())),
		"--status-processors", "4", "--operation-processors", "2",
		"--loglevel", logLevel, "--logformat", "text",
	}
	ctrl, err := a.start(bin, "argocd-application-controller", ctrlEnv, append(ctrlArgs, opts.ControllerArgs...)...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctrl, "http://"+a.ControllerMetricsAddr+"/healthz", 2*time.Minute); err != nil {
		return nil, err
	}
	return a, nil
}

// Stop stops the components (SIGTERM, then SIGKILL after 10 s) in reverse order and
// removes the directory the harness created unless KeepDir.
func (a *ArgoCD) Stop() error {
	if a == nil {
		return nil
	}
	var errs []error
	for i := len(a.procs) - 1; i >= 0; i-- {
		errs = append(errs, a.procs[i].stop())
	}
	a.procs = nil
	if a.ownsDir && !a.keepDir {
		errs = append(errs, os.RemoveAll(a.Dir))
	}
	return errors.Join(errs...)
}

// prepare gives a its directory (a temporary one named after tmpPrefix when none was
// given), its kubeconfig, Argo CD v3's CRDs unless skipCRDs, and the prepared namespace:
// what every component needs before it starts.
func (a *ArgoCD) prepare(api *framework.APIServer, kubeconfigFile, tmpPrefix string, skipCRDs bool) error {
	if a.Dir == "" {
		dir, err := os.MkdirTemp("", tmpPrefix)
		if err != nil {
			return err
		}
		a.Dir, a.ownsDir = dir, true
	} else if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	var err error
	if a.Kubeconfig, err = kubeconfigFor(api, kubeconfigFile, filepath.Join(a.Dir, "kubeconfig")); err != nil {
		return err
	}
	if !skipCRDs {
		if err := InstallArgoCDV3CRDs(api.Config); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return PrepareArgoCDNamespace(ctx, api.Client, a.Namespace)
}

// Logs is the log file of a component ("argocd-application-controller",
// "argocd-repo-server", "argocd-cmp-server", "argocd-server", "argocd-redis"
// (redis-server)).
func (a *ArgoCD) Logs(component string) string {
	return filepath.Join(a.Dir, component+".log")
}

// ArgoCDApplicationSetOptions configure StartArgoCDApplicationSetController.
type ArgoCDApplicationSetOptions struct {
	// APIServer is the hub. Required.
	APIServer *framework.APIServer
	// KubeconfigFile as in ArgoCDOptions.
	KubeconfigFile string
	// Dir, KeepDir, Namespace, Binary, LogLevel, SkipCRDs and ExtraEnv as in ArgoCDOptions.
	Dir       string
	KeepDir   bool
	Namespace string
	Binary    string
	LogLevel  string
	SkipCRDs  bool
	ExtraEnv  []string
	// RepoServerAddr is given to the controller for git generators (the hub runs none by
	// default; the cluster-decision-resource generator OCM uses does not need one).
	RepoServerAddr string
	// ExtraArgs are appended to the controller's flags.
	ExtraArgs []string
}

// StartArgoCDApplicationSetController starts Argo CD's applicationset-controller against the
// hub, after preparing the namespace as StartArgoCD does. It reads ApplicationSets in the
// namespace and, for OCM's clusterDecisionResource generator, the Placement-decision
// duck-type ConfigMap our gitopscluster controller writes. Stop the returned ArgoCD.
func StartArgoCDApplicationSetController(opts ArgoCDApplicationSetOptions) (_ *ArgoCD, err error) {
	if opts.APIServer == nil {
		return nil, errors.New("StartArgoCDApplicationSetController: no APIServer")
	}
	a := &ArgoCD{Name: "hub", Namespace: opts.Namespace, Dir: opts.Dir, keepDir: opts.KeepDir}
	if a.Namespace == "" {
		a.Namespace = ArgoCDNamespace
	}
	bin, err := argoCDBinaryOr(opts.Binary)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	if err := a.prepare(opts.APIServer, opts.KubeconfigFile, "argocd-appset-", opts.SkipCRDs); err != nil {
		return nil, err
	}
	logLevel := opts.LogLevel
	if logLevel == "" {
		logLevel = "info"
	}
	ports, err := framework.FreePorts(3)
	if err != nil {
		return nil, err
	}
	repo := opts.RepoServerAddr
	if repo == "" {
		repo = "127.0.0.1:1" // nothing listens; only git generators would dial it
	}
	args := []string{
		"--kubeconfig", a.Kubeconfig, "--namespace", a.Namespace,
		"--metrics-addr", framework.LoopbackAddress(ports[0]), "--probe-addr", framework.LoopbackAddress(ports[1]),
		"--webhook-addr", framework.LoopbackAddress(ports[2]),
		"--argocd-repo-server", repo, "--repo-server-plaintext",
		"--loglevel", logLevel, "--logformat", "text",
	}
	env := append(a.env(bin, opts.ExtraEnv), "TMPDIR="+a.mkdir("appset-tmp"))
	p, err := a.start(bin, "argocd-applicationset-controller", env, append(args, opts.ExtraArgs...)...)
	if err != nil {
		return nil, err
	}
	// The controller registers no health checks, so its probe address serves 404s: wait for
	// the metrics endpoint of its controller-runtime manager instead.
	if err := waitHTTP(p, "http://"+framework.LoopbackAddress(ports[0])+"/metrics", 2*time.Minute); err != nil {
		return nil, err
	}
	return a, nil
}

// ArgoCDBinary is bin/argocd/argocd of the repository, built by `make argocd`.
func ArgoCDBinary() (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "argocd", "argocd")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no Argo CD binary: run `make argocd` first: %w", err)
	}
	return bin, nil
}

func argoCDBinaryOr(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	return ArgoCDBinary()
}

// ArgoCDV3CRDPaths lists the CRDs of the Argo CD the binary is built from (the
// argo-cd/v3 module hack/argocd/go.mod pins).
func ArgoCDV3CRDPaths() ([]string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v3")
	cmd.Dir = filepath.Join(root, "hack", "argocd")
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		// Not in the module cache yet: download it.
		dl := exec.Command("go", "mod", "download", "github.com/argoproj/argo-cd/v3")
		dl.Dir = cmd.Dir
		if out, err := dl.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("downloading argo-cd/v3 for its CRDs: %w: %s", err, out)
		}
		cmd = exec.Command(cmd.Args[0], cmd.Args[1:]...)
		cmd.Dir = dl.Dir
		if out, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("locating argo-cd/v3 in the module cache: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	var paths []string
	for _, f := range []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"} {
		paths = append(paths, filepath.Join(dir, "manifests", "crds", f))
	}
	return paths, nil
}

// InstallArgoCDV3CRDs installs (or updates to) Argo CD v3's CRDs and waits until they are
// served. The v2.14 CRDs framework installs lack fields v3 added (automated.enabled,
// retry.refresh, ...), which the API server would prune; v3's only add fields, so clients
// typed with argo-cd/v2 keep working.
func InstallArgoCDV3CRDs(cfg *rest.Config) error {
	paths, err := ArgoCDV3CRDPaths()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: paths, ErrorIfPathMissing: true, MaxTime: 2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("installing Argo CD v3 CRDs: %w", err)
	}
	return nil
}

// PrepareArgoCDNamespace creates what Argo CD's installation manifests would: the namespace,
// argocd-cm and argocd-secret (labelled app.kubernetes.io/part-of=argocd, which Argo CD's
// settings informers select on) and the default AppProject, allowing every source and
// destination. Objects that exist are left alone.
func PrepareArgoCDNamespace(ctx context.Context, c client.Client, namespace string) error {
	partOf := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "AppProject",
		"metadata":   map[string]any{"name": "default", "namespace": namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: namespace, Labels: partOf},
			// Argo CD's defaults, spelled out; Application is tracked by annotation in v3.
			Data: map[string]string{"application.resourceTrackingMethod": "annotation"},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: namespace, Labels: partOf},
			Data:       map[string][]byte{"server.secretkey": []byte(hex.EncodeToString(key))},
		},
		project,
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

func (a *ArgoCD) env(bin string, extra []string) []string {
	env := os.Environ()
	// KUBECONFIG: the in-cluster destination (https://kubernetes.default.svc) resolves to
	// this file's server when ARGOCD_FAKE_IN_CLUSTER=true.
	// PATH: the repo-server runs `argocd` as git's askpass helper.
	// ARGOCD_GPG_ENABLED=false: no gpg keyring under /app/config.
	env = append(env,
		"KUBECONFIG="+a.Kubeconfig,
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_GPG_ENABLED=false",
		"HOME="+a.mkdir("home"),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	return append(env, extra...)
}

func (a *ArgoCD) mkdir(name string) string {
	dir := filepath.Join(a.Dir, name)
	_ = os.MkdirAll(dir, 0o700)
	return dir
}

func (a *ArgoCD) start(bin, component string, env []string, args ...string) (*argoCDProcess, error) {
	p, err := startArgoCDProcess(bin, component, a.Logs(component), env, args)
	if err != nil {
		return nil, err
	}
	a.procs = append(a.procs, p)
	return p, nil
}

// argoCDProcess is one running component, its output in a log file.
type argoCDProcess struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startArgoCDProcess(bin, component, logPath string, env, args []string) (*argoCDProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	return runArgoCDProcess(bin, component, logFile, env, args)
}

// runArgoCDProcess starts the process with its output into logFile, which it closes when
// the process exits.
func runArgoCDProcess(bin, component string, logFile *os.File, env, args []string) (*argoCDProcess, error) {
	logPath := logFile.Name()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(env, "ARGOCD_BINARY_NAME="+component)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group (Stop also reaches the git processes the repo-server runs), and
	// killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", component, err)
	}
	p := &argoCDProcess{name: component, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *argoCDProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.err, p.log, tail(p.log, 20))
	default:
		return nil
	}
}

func (p *argoCDProcess) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

func waitTCP(p *argoCDProcess, addr string, timeout time.Duration) error {
	return waitListening(p, "tcp", addr, timeout)
}

// waitListening waits until p accepts connections on network address addr ("tcp" or
// "unix"), failing early if p exits.
func waitListening(p *argoCDProcess, network, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := p.exited(); err != nil {
			return err
		}
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %s: %w; log %s:\n%s", p.name, addr, timeout, err, p.log, tail(p.log, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitHTTP(p *argoCDProcess, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		if err := p.exited(); err != nil {
			return err
		}
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy at %s after %s: %w; log %s:\n%s", p.name, url, timeout, err, p.log, tail(p.log, 20))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kubeconfigFor is file when given, else path, where it writes the admin kubeconfig envtest
// generated for the API server (components get --namespace).
func kubeconfigFor(api *framework.APIServer, file, path string) (string, error) {
	if file != "" {
		return file, nil
	}
	data := api.Env.KubeConfig
	if len(data) == 0 {
		return "", errors.New("the API server has no kubeconfig (envtest.Environment.KubeConfig is empty)")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
