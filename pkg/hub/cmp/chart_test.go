package cmp

import (
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

const chartDir = "../../../charts/argocd-pull-integration"

func renderChart(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: "argocd-pull-integration", Namespace: "argocd", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// configMapData decodes the data of the ConfigMap a chart template rendered.
func configMapData(t *testing.T, rendered string) map[string]string {
	t.Helper()
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(rendered), &cm); err != nil {
		t.Fatalf("%v in\n%s", err, rendered)
	}
	if cm.Kind != "ConfigMap" {
		t.Fatalf("rendered a %q, want a ConfigMap", cm.Kind)
	}
	return cm.Data
}

func TestChartRendersThePluginOnlyWhenEnabled(t *testing.T) {
	for name, content := range renderChart(t, nil) {
		if strings.Contains(name, "/cmp-") && strings.TrimSpace(content) != "" {
			t.Errorf("%s rendered with cmp disabled:\n%s", name, content)
		}
	}

	files := renderChart(t, map[string]any{"cmp": map[string]any{"enabled": true}})
	plugin := configMapData(t, files["argocd-pull-integration/templates/cmp-plugin.yaml"])
	var config struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Generate struct {
				Command []string `json:"command"`
			} `json:"generate"`
			Discover struct {
				FileName string `json:"fileName"`
			} `json:"discover"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(plugin["plugin.yaml"]), &config); err != nil {
		t.Fatalf("plugin.yaml: %v\n%s", err, plugin["plugin.yaml"])
	}
	if config.APIVersion != "argoproj.io/v1alpha1" || config.Kind != "ConfigManagementPlugin" || config.Metadata.Name != "ocm-manifestwork" ||
		strings.Join(config.Spec.Generate.Command, " ") != "argocd-pull-addon cmp generate" ||
		config.Spec.Discover.FileName != "" {
		t.Errorf("plugin.yaml = %+v", config)
	}

	health := configMapData(t, files["argocd-pull-integration/templates/cmp-health.yaml"])
	script, err := os.ReadFile(healthScript)
	if err != nil {
		t.Fatal(err)
	}
	got := health["resource.customizations.health.work.open-cluster-management.io_ManifestWork"]
	if strings.TrimSpace(got) != strings.TrimSpace(string(script)) {
		t.Errorf("the health ConfigMap does not hold %s verbatim:\n%s", healthScript, got)
	}
}

func TestChartPluginDiscovery(t *testing.T) {
	plugin := configMapData(t, renderChart(t, map[string]any{"cmp": map[string]any{"enabled": true}})["argocd-pull-integration/templates/cmp-plugin.yaml"])["plugin.yaml"]
	if strings.Contains(plugin, "discover") {
		t.Errorf("by default plugin.yaml has a discover rule, want none:\n%s", plugin)
	}
	plugin = configMapData(t, renderChart(t, map[string]any{"cmp": map[string]any{"enabled": true, "discoverFileName": ".ocm-manifestwork"}})["argocd-pull-integration/templates/cmp-plugin.yaml"])["plugin.yaml"]
	if !strings.Contains(plugin, "discover:\n") || !strings.Contains(plugin, `fileName: ".ocm-manifestwork"`) {
		t.Errorf("with cmp.discoverFileName set, plugin.yaml has no discover rule for it:\n%s", plugin)
	}
}
