package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// ControlPlane is one cluster of the fleet: a kube-apiserver with its etcd (as
// framework.StartAPIServer starts them, with every CRD the project and OCM use) and a
// kube-controller-manager next to it, so that the cluster garbage-collects, deletes
// namespaces and, on the hub, signs approved CSRs as a real one does.
type ControlPlane struct {
	// Name is "hub" or the managed cluster's name.
	Name      string
	APIServer *framework.APIServer
	// KubeconfigFile is an admin (system:masters) kubeconfig for processes the tests start.
	KubeconfigFile string
	// Audit is the API server's audit log of the pull model manager's requests (the hub
	// only; nil elsewhere).
	Audit *framework.AuditLog

	ca  *controlPlaneCA
	kcm *framework.ControllerManager
	// dir holds the kubeconfig and the logs of the processes the fleet starts.
	dir string
	// api is the kube-apiserver's command line once StopAPIServer has stopped it
	// (faults.go).
	apiMu sync.Mutex
	api   *apiServerCommand
}

// controlPlaneOptions say what startControlPlane installs and runs.
type controlPlaneOptions struct {
	name           string
	dir            string // for the kubeconfig and kube-controller-manager's log
	withArgoCDCRDs bool
	// controllers are kube-controller-manager's --controllers; csrsigning also gets the
	// client CA as its signing key.
	controllers []string
	// audit, when set, is the API server's audit log.
	audit *framework.AuditLog
}

// startControlPlane starts an API server like framework.StartAPIServerWith, but with a
// client CA whose key is on disk (see controlPlaneCA) and OCM's ClusterManager- and
// Klusterlet-side CRDs on top of framework.CRDPaths, then kube-controller-manager.
func startControlPlane(opts controlPlaneOptions) (started *ControlPlane, err error) {
	assets, err := framework.AssetsDir()
	if err != nil {
		return nil, err
	}
	// Before an API server starts for nothing.
	if _, err := framework.ControllerManagerBinary(); err != nil {
		return nil, err
	}
	crds, err := controlPlaneCRDPaths(opts.withArgoCDCRDs)
	if err != nil {
		return nil, err
	}
	ca, err := newControlPlaneCA(opts.name)
	if err != nil {
		return nil, err
	}
	apiServer := &envtest.APIServer{}
	apiServer.SecureServing.Authn = ca
	if opts.audit != nil {
		if err := opts.audit.Configure(apiServer); err != nil {
			return nil, err
		}
	}
	env := framework.NewEnvironment(assets, crds, apiServer)
	cfg, err := env.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting the %s API server from %s: %w", opts.name, assets, err), env.Stop())
	}
	cp := &ControlPlane{Name: opts.name, dir: opts.dir, ca: ca, APIServer: &framework.APIServer{Env: env, Config: cfg}, Audit: opts.audit}
	defer func() {
		if err != nil {
			err, started = errors.Join(err, cp.Stop()), nil
		}
	}()
	scheme, err := controlPlaneScheme()
	if err != nil {
		return cp, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return cp, fmt.Errorf("creating a client for the %s API server: %w", opts.name, err)
	}
	cp.APIServer.Scheme, cp.APIServer.Client = scheme, c

	cp.KubeconfigFile = filepath.Join(opts.dir, "admin.kubeconfig")
	if err := os.WriteFile(cp.KubeconfigFile, env.KubeConfig, 0o600); err != nil {
		return cp, fmt.Errorf("writing the %s admin kubeconfig: %w", opts.name, err)
	}
	cp.kcm, err = framework.StartControllerManager(framework.ControllerManagerOptions{
		Kubeconfig: cp.KubeconfigFile, Controllers: opts.controllers,
		SigningCertFile: ca.CertFile(), SigningKeyFile: ca.KeyFile(),
		LogFile: filepath.Join(opts.dir, "kube-controller-manager.log"),
	})
	if err != nil {
		return cp, fmt.Errorf("starting kube-controller-manager for %s: %w", opts.name, err)
	}
	return cp, nil
}

// ControllerManagerLog is kube-controller-manager's output, to read when a test fails
// (the fleet's directory, and the log with it, goes on Stop).
func (cp *ControlPlane) ControllerManagerLog() string {
	if cp == nil || cp.kcm == nil {
		return ""
	}
	return cp.kcm.LogFile()
}

// exited reports kube-controller-manager's exit if it has ended while the fleet runs.
func (cp *ControlPlane) exited() error {
	if cp == nil || cp.kcm == nil {
		return nil
	}
	if err := cp.kcm.Exited(); err != nil {
		return fmt.Errorf("%s: %w", cp.Name, err)
	}
	return nil
}

// Stop stops kube-controller-manager, then the API server (restarted or not) and etcd.
func (cp *ControlPlane) Stop() error {
	if cp == nil {
		return nil
	}
	var errs []error
	if cp.kcm != nil {
		if err := cp.kcm.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-controller-manager of %s: %w", cp.Name, err))
		}
	}
	// A kube-apiserver restarted by StartAPIServer first: envtest's Stop skips the process
	// it started, which has exited, and knows nothing of this one.
	if err := cp.stopAPIServerRestart(); err != nil {
		errs = append(errs, fmt.Errorf("stopping the restarted %s API server: %w", cp.Name, err))
	}
	if cp.APIServer != nil {
		if err := cp.APIServer.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the %s API server: %w", cp.Name, err))
		}
	}
	return errors.Join(errs...)
}

// controlPlaneScheme is framework.Scheme plus the OCM types only the fleet's tests use:
// ManagedClusterSets and their bindings, ClusterClaims, AddOnPlacementScores.
func controlPlaneScheme() (*runtime.Scheme, error) {
	scheme, err := framework.Scheme()
	if err != nil {
		return nil, err
	}
	if err := errors.Join(clusterv1beta2.Install(scheme), clusterv1alpha1.Install(scheme)); err != nil {
		return nil, fmt.Errorf("adding OCM's cluster v1beta2 and v1alpha1 types to the scheme: %w", err)
	}
	return scheme, nil
}

// controlPlaneCRDPaths is framework.CRDPaths plus what OCM's hub controllers and
// klusterlet agents watch beyond ManagedCluster, ManagedClusterSets and their bindings,
// ManifestWork, Placement and the addon API: ClusterClaims and AddOnPlacementScores
// (cluster/v1alpha1), ManifestWorkReplicaSets, and the klusterlet's ClusterProperties. Every
// API server gets them all so a cluster can also serve as a hub in a later test.
func controlPlaneCRDPaths(withArgoCD bool) ([]string, error) {
	paths, err := framework.CRDPaths()
	if err != nil {
		return nil, err
	}
	if !withArgoCD {
		argo, err := framework.ArgoCDCRDPaths()
		if err != nil {
			return nil, err
		}
		paths = slices.DeleteFunc(paths, func(p string) bool { return slices.Contains(argo, p) })
	}
	api, err := framework.ModuleDir("open-cluster-management.io/api")
	if err != nil {
		return nil, err
	}
	ocm, err := framework.ModuleDir("open-cluster-management.io/ocm")
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{"cluster/v1alpha1", "work/v1alpha1"} {
		files, err := filepath.Glob(filepath.Join(api, dir, "*.crd.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no OCM CRDs in %s/%s (err: %v)", api, dir, err)
		}
		paths = append(paths, files...)
	}
	return append(paths, filepath.Join(ocm, "manifests", "klusterlet", "managed", "clusterproperties.crd.yaml")), nil
}
