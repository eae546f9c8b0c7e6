// Command devhub is `make run`: it starts a local hub API server (kube-apiserver and
// etcd from bin/envtest, with our CRDs, OCM's and Argo CD's installed), writes a
// kubeconfig for it, and runs the manager against it until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig-out", "bin/devhub.kubeconfig", "Where to write the hub's admin kubeconfig.")
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(ctrl.SetupSignalHandler(), *kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "devhub:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfigPath string) error {
	hub, err := framework.StartAPIServer()
	if err != nil {
		return err
	}
	defer func() {
		if err := hub.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devhub: stopping the API server:", err)
		}
	}()
	admin, err := hub.Env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	data, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfigPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, data, 0o600); err != nil {
		return err
	}
	abs, _ := filepath.Abs(kubeconfigPath)

	o := manager.NewOptions()
	o.Endpoints.Kubeconfig = kubeconfigPath
	fmt.Printf(`
Local hub API server: %s  (OCM, Argo CD and argocd-pull-addon CRDs installed)
  export KUBECONFIG=%s
Manager endpoints:    http://%s/metrics   http://%s/healthz   http://%s/readyz
Press Ctrl-C to stop; the API server and etcd stop with it.

`, hub.Config.Host, abs, o.Endpoints.MetricsAddr, o.Endpoints.ProbeAddr, o.Endpoints.ProbeAddr)
	return o.Run(ctx)
}
