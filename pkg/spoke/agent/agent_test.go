package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

func TestFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    func(*Options) bool
		wantErr string
	}{
		"defaults": {
			args: []string{"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig", "--cluster-name=c1"},
			want: func(o *Options) bool {
				return o.AddonNamespace == "open-cluster-management-agent-addon" && cmp.Equal(o.WatchNamespaces, []string{"argocd"})
			},
		},
		"the Deployment template's flags": {
			args: []string{"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig", "--cluster-name=c1", "--addon-namespace=addons",
				"--watch-namespaces=argocd,team-b", "--health-probe-bind-address=:8091", "--metrics-bind-address=:8090", "--kubeconfig="},
			want: func(o *Options) bool {
				return o.HubKubeconfig == "/managed/hub-kubeconfig/kubeconfig" && o.ClusterName == "c1" && o.AddonNamespace == "addons" &&
					cmp.Equal(watchNamespaces(o.WatchNamespaces), []string{"argocd", "team-b"}) && o.Endpoints.ProbeAddr == ":8091"
			},
		},
		"the hub client's budget and the reconnect jitter, apart from the managed cluster's": {
			args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--hub-kube-api-qps=2.5", "--hub-kube-api-burst=5",
				"--hub-reconnect-jitter=30s", "--kube-api-qps=100", "--kube-api-burst=150"},
			want: func(o *Options) bool {
				return o.HubQPS == 2.5 && o.HubBurst == 5 && o.HubReconnectJitter == 30*time.Second &&
					o.Endpoints.QPS == 100 && o.Endpoints.Burst == 150
			},
		},
		"resource trees on by default, every 10s": {
			args: []string{"--hub-kubeconfig=k", "--cluster-name=c1"},
			want: func(o *Options) bool { return o.ResourceTrees && o.ResourceTreeInterval == 10*time.Second },
		},
		"resource trees switched off, another interval": {
			args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--resource-trees=false", "--resource-tree-interval=1m"},
			want: func(o *Options) bool { return !o.ResourceTrees && o.ResourceTreeInterval == time.Minute },
		},
		"resource tree interval must be positive": {args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--resource-tree-interval=0s"},
			wantErr: "--resource-tree-interval 0s is not a positive duration"},
		"cluster name and hub kubeconfig are required": {args: []string{"--watch-namespaces= "}, wantErr: "--hub-kubeconfig is required"},
		"hub QPS must be positive": {args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--hub-kube-api-qps=0"},
			wantErr: "--hub-kube-api-qps 0 is not a positive"},
		"hub burst must be positive": {args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--hub-kube-api-burst=0"},
			wantErr: "--hub-kube-api-burst 0 is not a positive"},
		"reconnect jitter must not be negative": {args: []string{"--hub-kubeconfig=k", "--cluster-name=c1", "--hub-reconnect-jitter=-1s"},
			wantErr: "--hub-reconnect-jitter -1s is negative"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			cmd := &cobra.Command{}
			o.AddFlags(cmd)
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatalf("parsing %v: %v", tt.args, err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if !tt.want(o) {
				t.Errorf("options after %v: %+v", tt.args, o)
			}
		})
	}
}

func TestHubKubeconfigNamesCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	content := `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://hub.example:6443", certificate-authority: ca.crt}
users:
- name: agent
  user: {client-certificate: tls.crt, client-key: tls.key}
contexts:
- name: hub
  context: {cluster: hub, user: agent}
current-context: hub
`
	// The loader checks the files exist; it does not parse them.
	for name, data := range map[string]string{"kubeconfig": content, "ca.crt": "ca", "tls.crt": "cert", "tls.key": "key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := NewOptions()
	o.HubKubeconfig = kubeconfig
	cfg, err := o.hubRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	// client-go's transport reloads the key pair on rotation exactly when both are files
	// and neither is inline data (transport.loadTLSFiles sets ReloadTLSFiles).
	if cfg.CertFile != filepath.Join(dir, "tls.crt") || cfg.KeyFile != filepath.Join(dir, "tls.key") || len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		t.Errorf("hub config certificate %q key %q (inline %d/%d bytes): want the files next to the kubeconfig, not data",
			cfg.CertFile, cfg.KeyFile, len(cfg.CertData), len(cfg.KeyData))
	}
	if cfg.QPS != DefaultHubQPS || cfg.Burst != DefaultHubBurst {
		t.Errorf("hub config QPS/burst %v/%d, want the hub's own %v/%d", cfg.QPS, cfg.Burst, DefaultHubQPS, DefaultHubBurst)
	}
	// One bucket for every client made from the config: client-go makes one per client
	// (per API group) when the config has none.
	if cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != DefaultHubQPS || rest.CopyConfig(cfg).RateLimiter != cfg.RateLimiter {
		t.Errorf("hub config rate limiter %v, want one shared token bucket of %v QPS", cfg.RateLimiter, DefaultHubQPS)
	}
}
