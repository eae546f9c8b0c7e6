package cmp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmValuesOnlyAsPaths: URLs and absolute paths are refused when the environment is
// read, before anything is rendered.
func TestHelmValuesOnlyAsPaths(t *testing.T) {
	for _, entry := range []string{
		"https://evil.example.com/values.yaml",
		"http://169.254.169.254/latest/meta-data",
		"oci://registry.example.com/values",
		"file:///etc/passwd",
		"/var/run/secrets/kubernetes.io/serviceaccount/token",
	} {
		t.Run(entry, func(t *testing.T) {
			vars := with(guestbookEnv(), EnvHelmValues, "values.yaml,"+entry)
			_, err := EnvironmentFrom(func(k string) string { return vars[k] })
			if err == nil || !strings.Contains(err.Error(), "is not a path inside the repository") || !strings.Contains(err.Error(), entry) {
				t.Fatalf("error = %v, want one naming %q as not a path inside the repository", err, entry)
			}
		})
	}
}

// TestHelmValuesConfinedToRepository renders a chart at apps/web of a repository checkout
// next to files outside it, with real files and symlinks.
func TestHelmValuesConfinedToRepository(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	chart := filepath.Join(repo, "apps", "web")
	writeFiles(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values-prod.yaml":  "name: web\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	writeFiles(t, repo, map[string]string{"common/values.yaml": "name: web\n"})
	writeFiles(t, base, map[string]string{"secret/token": "not yours\n", "other-repo/values.yaml": "name: x\n"})
	symlink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(chart, link)); err != nil {
			t.Fatal(err)
		}
	}
	symlink("../../common/values.yaml", "common-link.yaml")     // inside the repository
	symlink("../../../secret/token", "token-link.yaml")         // out of it
	symlink(filepath.Join(base, "other-repo"), "other")         // a directory out of it
	symlink("/var/run/secrets/kubernetes.io", "serviceaccount") // out of it, absolute
	symlink("../../common", "common-dir")                       // a directory inside

	tests := []struct {
		entry   string
		outside bool
	}{
		{entry: "values-prod.yaml"},
		{entry: "../../common/values.yaml"},
		{entry: "./values-prod.yaml"},
		{entry: "common-link.yaml"},
		{entry: "common-dir/values.yaml"},
		{entry: "missing.yaml"}, // left to helm, which names it
		{entry: "../../../secret/token", outside: true},
		{entry: "../../../other-repo/values.yaml", outside: true},
		{entry: "../../common/../../secret/token", outside: true},
		{entry: "token-link.yaml", outside: true},
		{entry: "other/values.yaml", outside: true},
		{entry: "serviceaccount/token", outside: true},
		{entry: "../../../missing.yaml", outside: true},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			vars := with(with(guestbookEnv(), EnvHelmValues, tt.entry), EnvAppSourcePath, "apps/web")
			env := environment(t, vars)
			err := valuesFilesInRepository(chart, env)
			if !tt.outside {
				if err != nil {
					t.Fatalf("refused a file inside the repository: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted a values file outside the repository")
			}
			if want := `HELM_VALUES (ARGOCD_ENV_HELM_VALUES) entry "` + tt.entry + `" leads out of the repository`; !strings.Contains(err.Error(), want) {
				t.Fatalf("error = %v, want it to contain %q", err, want)
			}
			// And Generate stops there, before helm runs.
			if _, err := Generate(context.Background(), chart, env); err == nil || !strings.Contains(err.Error(), "leads out of the repository") {
				t.Fatalf("Generate error = %v, want the refusal", err)
			}
		})
	}

	t.Run("without a source path the source directory is the repository", func(t *testing.T) {
		env := environment(t, with(guestbookEnv(), EnvHelmValues, "../../common/values.yaml"))
		if err := valuesFilesInRepository(chart, env); err == nil || !strings.Contains(err.Error(), "leads out of the repository") {
			t.Fatalf("error = %v, want a refusal", err)
		}
	})
}
