package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/builders"
	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// Names the tests share.
const (
	clusterName    = "cluster1"
	argoNamespace  = "argocd"
	teamNamespace  = "team-b"
	addonNamespace = "open-cluster-management-agent-addon"
	hubAppNS       = "hub-apps"
)

// runningAgent is an agent running in the test process.
type runningAgent struct {
	cancel context.CancelFunc
	done   chan error
}

// startAgent runs an agent until stop; opts gets the test defaults first.
func startAgent(configure func(*agent.Options)) *runningAgent {
	o := agent.NewOptions()
	o.ClusterName = clusterName
	o.AddonNamespace = addonNamespace
	o.WatchNamespaces = []string{argoNamespace, teamNamespace}
	o.Endpoints.MetricsAddr, o.Endpoints.ProbeAddr = "0", "0"
	configure(o)
	ctx, cancel := context.WithCancel(context.Background())
	a := &runningAgent{cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- o.Run(ctx) }()
	return a
}

// stop stops the agent and returns what Run returned.
func (a *runningAgent) stop() error {
	a.cancel()
	select {
	case err := <-a.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("agent did not stop within a minute")
	}
}

// reportWrites is how many writes the agent under test sent to the hub for the report name.
func reportWrites(name string) int { return writes.Of("applicationstatusreports", name) }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// viaProxy is cfg with its host replaced by the proxy's address.
func viaProxy(cfg *rest.Config, p *framework.TCPProxy) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + p.Addr()
	return c
}

// hostPort is the host:port of cfg's API server.
func hostPort(cfg *rest.Config) (string, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", fmt.Errorf("parsing API server address %q: %w", cfg.Host, err)
	}
	if u.Host == "" {
		return cfg.Host, nil
	}
	return u.Host, nil
}

// writeKubeconfig writes cfg as addon registration does: a kubeconfig naming its client
// certificate and key as files next to it. It returns the kubeconfig's path.
func writeKubeconfig(dir string, cfg *rest.Config) (string, error) {
	files := map[string][]byte{"ca.crt": cfg.CAData, "tls.crt": cfg.CertData, "tls.key": cfg.KeyData}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: filepath.Join(dir, "ca.crt")}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(dir, "tls.crt"), ClientKey: filepath.Join(dir, "tls.key")}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	kc.CurrentContext = "hub"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	return path, nil
}

// pulledApp starts an Application as propagation delivers it to the managed cluster:
// the payload of the hub Application of the same name in hubAppNS.
func pulledApp(namespace, name string) *builders.ApplicationBuilder {
	return builders.Application(name).Namespace(namespace).PulledFrom(hubAppNS, name)
}

// Status shapes as Argo CD writes them.
var (
	started  = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	finished = metav1.NewTime(started.Add(time.Minute))
)

func syncedHealthy(rev string) argov1alpha1.ApplicationStatus {
	return argov1alpha1.ApplicationStatus{
		Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: rev},
		Health: argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy},
		OperationState: &argov1alpha1.OperationState{
			Phase: synccommon.OperationSucceeded, Message: "successfully synced (all tasks run)", StartedAt: started, FinishedAt: &finished,
		},
		Resources: []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1alpha1.SyncStatusCodeSynced,
				Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1alpha1.SyncStatusCodeSynced,
				Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
		},
	}
}

// setStatus writes status as Argo CD does: an update of the whole Application, which has
// no status subresource.
func setStatus(ctx context.Context, c client.Client, key client.ObjectKey, status argov1alpha1.ApplicationStatus) error {
	app := &argov1alpha1.Application{}
	if err := c.Get(ctx, key, app); err != nil {
		return err
	}
	app.Status = status
	return c.Update(ctx, app)
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func managedClusterAddOn() *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: apps.AddonName}}
}
