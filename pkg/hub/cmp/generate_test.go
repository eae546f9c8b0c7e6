package cmp

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/<case>/manifestwork.golden from the current output")

// guestbookEnv is the environment Argo CD gives the plugin for a hub Application
// "guestbook" in namespace argocd whose destination namespace is cluster1.
func guestbookEnv() map[string]string {
	return map[string]string{
		EnvAppName:         "guestbook",
		EnvAppNamespace:    "cluster1",
		EnvAppRevision:     "53e28ff20cc530b9ada2173fbbd64d48338583ba",
		EnvArgoCDNamespace: "argocd",
		EnvNamespace:       "guestbook",
	}
}

func environment(t *testing.T, vars map[string]string) Environment {
	t.Helper()
	env, err := EnvironmentFrom(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestGenerateGolden renders testdata/<case>/source and compares with
// testdata/<case>/manifestwork.golden; go test ./pkg/cmp -run Golden -update rewrites them.
// The kustomize and helm cases run the real tools (tools_test.go).
func TestGenerateGolden(t *testing.T) {
	tests := map[string]struct {
		env       map[string]string
		renderers bool
	}{
		"plain":          {env: guestbookEnv()},
		"multi-document": {env: guestbookEnv()},
		"nested":         {env: guestbookEnv()},
		"kustomize":      {env: guestbookEnv(), renderers: true},
		// helm template named after the Application, in NAMESPACE, with the HELM_VALUES
		// files in order: the chart's templates and values files say where each value of
		// the golden comes from.
		"helm": {env: with(guestbookEnv(), EnvHelmValues, "values-common.yaml, values-prod.yaml"), renderers: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if tt.renderers {
				useRenderers(t)
			}
			dir := filepath.Join("testdata", name)
			got, err := Generate(context.Background(), filepath.Join(dir, "source"), environment(t, tt.env))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, "manifestwork.golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("ManifestWork differs from %s (-want +got):\n%s", golden, diff)
			}
			again, err := Generate(context.Background(), filepath.Join(dir, "source"), environment(t, tt.env))
			if err != nil || string(again) != string(got) {
				t.Errorf("a second run printed something else (err %v)", err)
			}
		})
	}
}

// TestGenerateIgnoresFileLayout: the same objects in other files give the same output.
func TestGenerateIgnoresFileLayout(t *testing.T) {
	env := environment(t, guestbookEnv())
	split := t.TempDir()
	writeFiles(t, split, map[string]string{
		"b.yaml": configMap("two", "") + "---\n" + configMap("one", ""),
	})
	joined := t.TempDir()
	writeFiles(t, joined, map[string]string{
		"z/one.yaml": configMap("one", ""),
		"a/two.yaml": configMap("two", ""),
	})
	a, errA := Generate(context.Background(), split, env)
	b, errB := Generate(context.Background(), joined, env)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("output depends on the file layout (-split +joined):\n%s", diff)
	}
}

func TestGenerateRejectsBadInput(t *testing.T) {
	big := strings.Repeat("x", MaxManifestsSize)
	tests := map[string]struct {
		files   map[string]string
		env     map[string]string // guestbookEnv() when nil
		noTools bool              // run with an empty PATH
		link    bool              // add link.yaml, a symlink to a file outside the source path
		wantErr string
	}{
		"YAML that looks like an object but is not": {
			files:   map[string]string{"bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [name: a\n"},
			wantErr: "bad.yaml document 1 is not YAML",
		},
		"a document without kind after a good one": {
			files:   map[string]string{"two.yaml": configMap("a", "") + "---\napiVersion: v1\nmetadata:\n  name: b\n"},
			wantErr: "two.yaml document 2 is not a Kubernetes object: it needs apiVersion and kind",
		},
		"a JSON file that is not an object": {
			files:   map[string]string{"package.json": `{"name": "web", "version": "1.0.0"}`},
			wantErr: "package.json is not a Kubernetes object: it needs apiVersion and kind",
		},
		"an object without a name": {
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: cm-\n  namespace: guestbook\n"},
			wantErr: "ConfigMap <no name> (cm.yaml document 1) has no metadata.name: a ManifestWork needs a name on every object (generateName is not supported)",
		},
		"a cluster-scoped object with a namespace": {
			files:   map[string]string{"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n  namespace: guestbook\n"},
			wantErr: `ClusterRole guestbook/reader (role.yaml document 1) is cluster-scoped but has metadata.namespace "guestbook": remove the namespace`,
		},
		"a namespaced object without a namespace and no NAMESPACE": {
			files:   map[string]string{"cm.yaml": configMap("settings", "")},
			env:     without(guestbookEnv(), EnvNamespace),
			wantErr: "ConfigMap settings (cm.yaml document 1) has no metadata.namespace: set it, or set the plugin env NAMESPACE to the namespace on the managed cluster",
		},
		"the same object twice": {
			files:   map[string]string{"a.yaml": configMap("settings", "guestbook"), "b.yaml": configMap("settings", "")},
			wantErr: "ConfigMap guestbook/settings (b.yaml document 1) is defined twice, also in a.yaml document 1: keep one",
		},
		"over the ManifestWork size limit": {
			files:   map[string]string{"big.yaml": configMap("big", "") + "data:\n  blob: " + big + "\n"},
			wantErr: fmt.Sprintf("more than the %d bytes a ManifestWork may hold: split the Application into smaller ones", MaxManifestsSize),
		},
		"no objects at all": {
			files:   map[string]string{"values.yaml": "replicaCount: 2\n"},
			wantErr: "no Kubernetes objects in the source path (Directory): a ManifestWork needs at least one",
		},
		"a kustomization without kustomize": {
			files:   map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": configMap("a", "")},
			noTools: true,
			wantErr: "the source path has a kustomization file but kustomize is not installed in the plugin's sidecar (not on PATH)",
		},
		"a chart without helm": {
			files:   map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
			noTools: true,
			wantErr: "the source path has Chart.yaml but helm is not installed in the plugin's sidecar (not on PATH)",
		},
		"a symlink out of the source path": {
			files:   map[string]string{"cm.yaml": configMap("a", "")},
			link:    true,
			wantErr: "link.yaml is a symlink out of the source path",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			if tt.link {
				outside := filepath.Join(t.TempDir(), "secret.yaml")
				writeFiles(t, filepath.Dir(outside), map[string]string{"secret.yaml": configMap("s", "")})
				if err := os.Symlink(outside, filepath.Join(dir, "link.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			if tt.noTools {
				t.Setenv("PATH", t.TempDir())
			}
			vars := tt.env
			if vars == nil {
				vars = guestbookEnv()
			}
			_, err := Generate(context.Background(), dir, environment(t, vars))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestGenerateKustomizeOverChart: a kustomization next to a Chart.yaml is rendered by
// kustomize, as Argo CD's discovery does, even though the chart would render with helm.
func TestGenerateKustomizeOverChart(t *testing.T) {
	useRenderers(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"kustomization.yaml":  "resources: [cm.yaml]\n",
		"cm.yaml":             configMap("from-kustomize", ""),
		"Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/helm.yaml": configMap("from-helm", ""),
	})
	out, err := Generate(context.Background(), dir, environment(t, guestbookEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "name: from-kustomize\n") || strings.Contains(string(out), "from-helm") {
		t.Errorf("want kustomize's ConfigMap from-kustomize and none of the chart's:\n%s", out)
	}
}

// TestGenerateReportsRendererFailure: when the real tool fails, the error names the
// command line and carries the tool's own message from stderr.
func TestGenerateReportsRendererFailure(t *testing.T) {
	tests := map[string]struct {
		files map[string]string
		env   map[string]string
		want  []string // substrings of the error, in order
	}{
		"kustomize with a missing resource": {
			files: map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"},
			env:   guestbookEnv(),
			want:  []string{"kustomize build . failed: Error: accumulating resources: ", "missing.yaml", "no such file or directory"},
		},
		"helm with a required value unset": {
			files: map[string]string{
				"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
				"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"values must set name\" .Values.name }}\n",
			},
			env:  guestbookEnv(),
			want: []string{"helm template guestbook . --namespace guestbook failed: Error: execution error at (web/templates/cm.yaml", "values must set name"},
		},
		"helm with a values file that does not exist": {
			files: map[string]string{
				"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
				"values-prod.yaml":  "name: web\n",
				"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"values must set name\" .Values.name }}\n",
			},
			env:  with(guestbookEnv(), EnvHelmValues, "values-prod.yaml,values-typo.yaml"),
			want: []string{"helm template guestbook . --namespace guestbook --values values-prod.yaml --values values-typo.yaml failed: Error: ", "values-typo.yaml"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			useRenderers(t)
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			_, err := Generate(context.Background(), dir, environment(t, tt.env))
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			rest := err.Error()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error = %q, want %q in order", err, tt.want)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func configMap(name, namespace string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func with(vars map[string]string, k, v string) map[string]string {
	vars[k] = v
	return vars
}

func without(vars map[string]string, k string) map[string]string {
	delete(vars, k)
	return vars
}
