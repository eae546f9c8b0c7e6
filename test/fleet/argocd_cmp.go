package fleet

// A Config Management Plugin (CMP) sidecar for the fleet's Argo CD, as a repo-server pod
// runs it: Argo CD's argocd-cmp-server (from the same multi-call binary) reading the
// plugin's plugin.yaml and serving on a unix socket in a directory the repo-server shares
// (ARGOCD_PLUGINSOCKFILEPATH on both, where a pod mounts the `plugins` volume). The
// repo-server finds plugins by their socket there: <dir>/<name>[-<version>].sock
// (Argo CD v3.2.11 cmpserver/plugin/config.go Address, util/app/discovery).
//
// The CMP server unpacks each source it is sent into $ARGOCD_CMP_WORKDIR/_cmp_server and
// wipes that directory when it starts (common.GetCMPWorkDir, plugin.Service.Init): every
// sidecar gets its own, never the shared default under /tmp.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// ArgoCDCMPOptions configure the Config Management Plugin sidecar of StartArgoCD.
type ArgoCDCMPOptions struct {
	// PluginYAML is the plugin's configuration, the plugin.yaml a pod mounts into the
	// sidecar's config directory. Required.
	PluginYAML string
	// Path is put in front of the sidecar's PATH: the directories holding the commands
	// plugin.yaml runs (our argocd-pull-addon, kustomize, ...).
	Path []string
	// ExtraEnv is added to the sidecar's environment. The harness already sets
	// ARGOCD_NAMESPACE to Argo CD's namespace, as a sidecar gets it from the downward API.
	ExtraEnv []string
}

// maxUnixSocketPath is the longest path a unix socket may have on Linux (sun_path is 108
// bytes, the last one NUL).
const maxUnixSocketPath = 107

// startCMPServer starts argocd-cmp-server with cmp's plugin.yaml and waits until it
// listens. It returns the socket directory, for the repo-server's ARGOCD_PLUGINSOCKFILEPATH.
func (a *ArgoCD) startCMPServer(bin string, env []string, logLevel string, cmp ArgoCDCMPOptions) (string, error) {
	socketName, err := cmpSocketName(cmp.PluginYAML)
	if err != nil {
		return "", err
	}
	configDir := a.mkdir("cmp-server-config")
	if err := os.WriteFile(filepath.Join(configDir, "plugin.yaml"), []byte(cmp.PluginYAML), 0o600); err != nil {
		return "", fmt.Errorf("writing the plugin's plugin.yaml: %w", err)
	}
	socketDir := a.mkdir("cmp-plugins")
	socket := filepath.Join(socketDir, socketName)
	if len(socket) > maxUnixSocketPath {
		return "", fmt.Errorf("the plugin socket path %s is longer than the %d bytes a unix socket may have: use a shorter Dir", socket, maxUnixSocketPath)
	}

	cmpEnv := append([]string{}, env...)
	if len(cmp.Path) > 0 {
		// exec.Cmd keeps the last of repeated variables: this PATH wins over a.env's.
		cmpEnv = append(cmpEnv, "PATH="+strings.Join(cmp.Path, string(os.PathListSeparator))+
			string(os.PathListSeparator)+lookupEnv(env, "PATH"))
	}
	cmpEnv = append(cmpEnv,
		"ARGOCD_PLUGINSOCKFILEPATH="+socketDir,
		"ARGOCD_CMP_WORKDIR="+a.mkdir("cmp-server-work"),
		"ARGOCD_NAMESPACE="+a.Namespace,
		"TMPDIR="+a.mkdir("cmp-server-tmp"),
	)
	cmpEnv = append(cmpEnv, cmp.ExtraEnv...)
	p, err := a.start(bin, "argocd-cmp-server", cmpEnv,
		"--config-dir-path", configDir, "--loglevel", logLevel, "--logformat", "text")
	if err != nil {
		return "", err
	}
	if err := waitListening(p, "unix", socket, time.Minute); err != nil {
		return "", err
	}
	return socketDir, nil
}

// cmpSocketName is the socket file name Argo CD derives from the plugin's name and
// version.
func cmpSocketName(pluginYAML string) (string, error) {
	var plugin struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(pluginYAML), &plugin); err != nil {
		return "", fmt.Errorf("reading the plugin's plugin.yaml: %w", err)
	}
	if plugin.Kind != "ConfigManagementPlugin" || plugin.Metadata.Name == "" {
		return "", fmt.Errorf("plugin.yaml is not a named ConfigManagementPlugin (kind %q, name %q)", plugin.Kind, plugin.Metadata.Name)
	}
	if plugin.Spec.Version != "" {
		return plugin.Metadata.Name + "-" + plugin.Spec.Version + ".sock", nil
	}
	return plugin.Metadata.Name + ".sock", nil
}

// lookupEnv is the value of the last entry of key in env.
func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// MergeArgoCDConfig merges data into argocd-cm in namespace, as `kubectl patch configmap
// argocd-cm --type merge` does: keys of data are set, the others kept. Argo CD's
// components watch argocd-cm, so entries merged later apply too.
func MergeArgoCDConfig(ctx context.Context, c client.Client, namespace string, data map[string]string) error {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "argocd-cm"}, cm); err != nil {
		return fmt.Errorf("reading argocd-cm in %s: %w", namespace, err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	for k, v := range data {
		cm.Data[k] = v
	}
	if err := c.Patch(ctx, cm, patch); err != nil {
		return fmt.Errorf("merging %d entries into argocd-cm in %s: %w", len(data), namespace, err)
	}
	return nil
}

// ChartCMP is what the hub chart ships for hub-rendered delivery (cmp.enabled, docs/cmp.md).
type ChartCMP struct {
	// PluginYAML is plugin.yaml of ConfigMap <release>-cmp, for the sidecar.
	PluginYAML string
	// ArgoCDConfig is the data of ConfigMap <release>-cmp-health: the entries to merge
	// into argocd-cm (the ManifestWork health check).
	ArgoCDConfig map[string]string
}

// RenderChartCMP renders the hub chart with values (which must enable cmp) and returns
// its plugin configuration and argocd-cm entries: what an operator installs per
// docs/cmp.md, so a test runs what ships.
func RenderChartCMP(values map[string]any) (*ChartCMP, error) {
	objs, err := framework.RenderChart(framework.ChartNamespace, values)
	if err != nil {
		return nil, err
	}
	pluginCM := framework.ChartName + "-cmp"
	cmp := &ChartCMP{}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, err := unstructured.NestedStringMap(o.Object, "data")
		if err != nil {
			return nil, fmt.Errorf("chart ConfigMap %s: %w", o.GetName(), err)
		}
		switch o.GetName() {
		case pluginCM:
			cmp.PluginYAML = data["plugin.yaml"]
		case pluginCM + "-health":
			cmp.ArgoCDConfig = data
		}
	}
	if cmp.PluginYAML == "" {
		return nil, fmt.Errorf("the chart rendered no ConfigMap %s with plugin.yaml: are cmp values enabled?", pluginCM)
	}
	if len(cmp.ArgoCDConfig) == 0 {
		return nil, errors.New("the chart rendered no ManifestWork health check (ConfigMap " + pluginCM + "-health): is cmp.healthCheck off?")
	}
	return cmp, nil
}
