// Package framework starts the real API servers the integration and end-to-end tests
// run against, with every CRD the project works with installed.
package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
)

// Scheme has every type the tests read or write: the manager's own scheme, which holds
// Kubernetes', ours, OCM's and Argo CD's types.
func Scheme() (*runtime.Scheme, error) {
	return manager.Scheme()
}

// APIServer is one running kube-apiserver with its etcd.
type APIServer struct {
	Env    *envtest.Environment
	Config *rest.Config
	// Scheme has every type the tests use; Client is an uncached admin client with it.
	Scheme *runtime.Scheme
	Client client.Client
}

// StartAPIServer starts a kube-apiserver and etcd from KUBEBUILDER_ASSETS (or, when unset,
// bin/envtest, where `make envtest` puts them) and installs our CRDs, OCM's and Argo CD's.
func StartAPIServer() (*APIServer, error) {
	return StartAPIServerWith(APIServerOptions{})
}

// APIServerOptions change what StartAPIServerWith installs.
type APIServerOptions struct {
	// WithoutArgoCD leaves Argo CD's CRDs out, as on a managed cluster where Argo CD is
	// not installed yet; InstallArgoCDCRDs installs them later.
	WithoutArgoCD bool
	// WithoutPullAddonCRDs leaves this project's CRDs out, as on a hub the chart has not
	// been installed on yet: the install scenario installs them with the chart.
	WithoutPullAddonCRDs bool
	// Audit, when set, makes the API server write that audit log.
	Audit *AuditLog
}

// StartAPIServerWith is StartAPIServer with options.
func StartAPIServerWith(opts APIServerOptions) (*APIServer, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	crds, err := CRDPaths()
	if err != nil {
		return nil, err
	}
	if opts.WithoutArgoCD {
		argo, err := ArgoCDCRDPaths()
		if err != nil {
			return nil, err
		}
		crds = slices.DeleteFunc(crds, func(p string) bool { return slices.Contains(argo, p) })
	}
	if opts.WithoutPullAddonCRDs {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		chart := filepath.Join(root, "charts", ChartName) + string(filepath.Separator)
		crds = slices.DeleteFunc(crds, func(p string) bool { return strings.HasPrefix(p, chart) })
	}
	apiServer := &envtest.APIServer{}
	if opts.Audit != nil {
		if err := opts.Audit.Configure(apiServer); err != nil {
			return nil, err
		}
	}
	env := NewEnvironment(assets, crds, apiServer)
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	// The defaults bind etcd's and the API server's ports on 127.0.0.1 already.
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after the processes are up (CRDs not served in time); stop them
		// so a failed suite leaves nothing running.
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err), env.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating a client: %w", err), env.Stop())
	}
	return &APIServer{Env: env, Config: cfg, Scheme: scheme, Client: c}, nil
}

// NewEnvironment is the envtest environment of one API server (and its etcd) from the
// binaries in assets, installing crds.
func NewEnvironment(assets string, crds []string, apiServer *envtest.APIServer) *envtest.Environment {
	return &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ControlPlane:          envtest.ControlPlane{APIServer: apiServer},
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              crds,
			ErrorIfPathMissing: true,
			// envtest waits 10 s for the CRDs to be served; several API servers starting
			// at once on 2 busy cores can need longer.
			MaxTime: 2 * time.Minute,
		},
	}
}

// InstallArgoCDCRDs installs Argo CD's CRDs and waits until they are served.
func (a *APIServer) InstallArgoCDCRDs() error {
	paths, err := ArgoCDCRDPaths()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(a.Config, envtest.CRDInstallOptions{
		Paths: paths, ErrorIfPathMissing: true, MaxTime: 2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("installing Argo CD's CRDs: %w", err)
	}
	return nil
}

// Stop stops the API server and etcd.
func (a *APIServer) Stop() error {
	if a == nil || a.Env == nil {
		return nil
	}
	return a.Env.Stop()
}

// AssetsDir is the directory holding kube-apiserver and etcd.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "envtest")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("no %s in %s: run `make envtest` (or `make test`) first: %w", bin, dir, err)
		}
	}
	return dir, nil
}

// RepoRoot is the directory of the main module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(data), "module github.com/open-cluster-management-io/argocd-pull-addon\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the argocd-pull-addon module")
		}
		dir = parent
	}
}

// CRDPaths lists the CRD files the API servers get: ours from the chart, OCM's from the
// api module (ManagedCluster, ManagedClusterSet and its binding, Placement, ManifestWork,
// the addon APIs), Argo CD's from the argo-cd module, at the versions go.mod pins.
func CRDPaths() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	ocm, err := ModuleDir("open-cluster-management.io/api")
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(root, "charts", "argocd-pull-integration", "files", "crds")}
	for _, dir := range []string{"cluster/v1", "cluster/v1beta1", "cluster/v1beta2", "work/v1", "addon/v1alpha1"} {
		files, err := filepath.Glob(filepath.Join(ocm, dir, "*.crd.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no OCM CRDs in %s/%s (err: %v)", ocm, dir, err)
		}
		paths = append(paths, files...)
	}
	argoPaths, err := ArgoCDCRDPaths()
	if err != nil {
		return nil, err
	}
	return append(paths, argoPaths...), nil
}

// ArgoCDCRDPaths lists Argo CD's CRD files, from the argo-cd module go.mod pins.
func ArgoCDCRDPaths() ([]string, error) {
	argo, err := ModuleDir("github.com/argoproj/argo-cd/v2")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"} {
		paths = append(paths, filepath.Join(argo, "manifests", "crds", f))
	}
	return paths, nil
}

// ModuleDir finds a dependency's directory in the module cache at the version go.mod
// pins, downloading it if needed.
func ModuleDir(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("reading `go mod download -json %s`: %w", module, err)
	}
	if mod.Dir != "" {
		return mod.Dir, nil
	}
	return "", fmt.Errorf("module %s has no directory in `go mod download` output", module)
}
