package fleet

// The hub's Argo CD API server (argocd-server), which the UI and the argocd CLI talk to:
// it answers a pulled Application's resource tree from the hub's Argo CD Redis, where our
// manager writes what the agent reported. Plaintext HTTP on loopback, authentication
// disabled: the tests are its only clients.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// ArgoCDRedisCompression is how the fleet's Argo CD compresses its Redis cache: Argo CD's
// default, which our manager's and agents' defaults match.
const ArgoCDRedisCompression = "gzip"

// ArgoCDServerOptions configure StartArgoCDServer.
type ArgoCDServerOptions struct {
	// APIServer is the hub. Required.
	APIServer *framework.APIServer
	// KubeconfigFile, Dir, KeepDir, Namespace, Binary, LogLevel and ExtraEnv as in
	// ArgoCDOptions.
	KubeconfigFile string
	Dir            string
	KeepDir        bool
	Namespace      string
	Binary         string
	LogLevel       string
	ExtraEnv       []string
	// RedisAddr and RedisPassword are the Redis of the Argo CD already running in the
	// namespace (its password is in the argocd-redis Secret). Empty: StartArgoCDServer
	// starts a Redis of its own and writes its password into that Secret.
	RedisAddr     string
	RedisPassword string
	// RepoServerAddr is the repo-server the API server asks for manifests and app details
	// (not for resource trees); empty: nothing listens there.
	RepoServerAddr string
}

// StartArgoCDServer prepares the namespace as StartArgoCD does (Argo CD v3's CRDs
// included), starts a Redis unless given one, and starts argocd-server with
// --insecure --disable-auth on loopback, reading its caches with gzip compression. It
// returns once its REST API answers. Stop the returned ArgoCD.
func StartArgoCDServer(opts ArgoCDServerOptions) (_ *ArgoCD, err error) {
	if opts.APIServer == nil {
		return nil, errors.New("StartArgoCDServer: no APIServer")
	}
	a := &ArgoCD{Name: "hub", Namespace: opts.Namespace, Dir: opts.Dir, keepDir: opts.KeepDir,
		RedisAddr: opts.RedisAddr, RedisPassword: opts.RedisPassword}
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
	if err := a.prepare(opts.APIServer, opts.KubeconfigFile, "argocd-server-", false); err != nil {
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
	if a.RedisAddr == "" {
		if err := a.startRedis(opts.APIServer.Client, ports[2]); err != nil {
			return nil, err
		}
	}
	a.ServerAddr = framework.LoopbackAddress(ports[0])
	repo := opts.RepoServerAddr
	if repo == "" {
		repo = "127.0.0.1:1"
	}
	args := []string{
		"--kubeconfig", a.Kubeconfig, "--namespace", a.Namespace,
		"--address", "127.0.0.1", "--port", strconv.Itoa(ports[0]),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[1]),
		"--insecure", "--disable-auth",
		"--redis", a.RedisAddr, "--redis-compress", ArgoCDRedisCompression,
		"--repo-server", repo, "--repo-server-plaintext",
		// No UI assets are built into the binary; nothing extra to serve either.
		"--staticassets", a.mkdir("static"),
		"--loglevel", logLevel, "--logformat", "text",
	}
	env := append(a.env(bin, opts.ExtraEnv), "REDIS_PASSWORD="+a.RedisPassword, "TMPDIR="+a.mkdir("server-tmp"),
		// The REST API reaches the server's own gRPC service through localhost:<port>,
		// which gRPC resolves with a DNS TXT lookup too: in the private network namespace
		// no name server answers, and the first API call would wait 10 s for it.
		"GRPC_ENABLE_TXT_SERVICE_CONFIG=false")
	p, err := a.start(bin, "argocd-server", env, args...)
	if err != nil {
		return nil, err
	}
	// /healthz answers before the REST API does; /api/version goes the API's way.
	if err := waitHTTP(p, a.ServerURL()+"/api/version", 2*time.Minute); err != nil {
		return nil, err
	}
	return a, nil
}

// ServerURL is where argocd-server, when a runs one, serves its API (plaintext HTTP).
func (a *ArgoCD) ServerURL() string { return "http://" + a.ServerAddr }

// ResourceTree asks argocd-server for the resource tree of the Application
// appNamespace/name, as the UI and `argocd app resources` do (GET
// /api/v1/applications/{name}/resource-tree?appNamespace=...).
func (a *ArgoCD) ResourceTree(ctx context.Context, appNamespace, name string) (*argov1alpha1.ApplicationTree, error) {
	tree := &argov1alpha1.ApplicationTree{}
	return tree, a.getAPI(ctx, "/api/v1/applications/"+url.PathEscape(name)+"/resource-tree", appNamespace, tree)
}

// Application asks argocd-server for the Application appNamespace/name (GET
// /api/v1/applications/{name}?appNamespace=...), as `argocd app get` does.
func (a *ArgoCD) Application(ctx context.Context, appNamespace, name string) (*argov1alpha1.Application, error) {
	app := &argov1alpha1.Application{}
	return app, a.getAPI(ctx, "/api/v1/applications/"+url.PathEscape(name), appNamespace, app)
}

// getAPI GETs path of argocd-server's API for an Application in appNamespace and decodes
// the JSON answer into out; an answer other than 200 OK is an error carrying its body.
func (a *ArgoCD) getAPI(ctx context.Context, path, appNamespace string, out any) error {
	if a.ServerAddr == "" {
		return errors.New("no argocd-server runs here")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := a.ServerURL() + path + "?" + url.Values{"appNamespace": {appNamespace}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decoding %T: %w", u, out, err)
	}
	return nil
}
