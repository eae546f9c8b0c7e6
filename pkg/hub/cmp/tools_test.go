package cmp

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The renderers pkg/hub/cmp's tests run: the real kustomize and helm, never stand-ins, so
// that the goldens are what the tools print. `make test` and `make test-unit` build the
// pinned versions into bin/ and name them in these variables; without them the tests use
// kustomize and helm from PATH. A test that needs a renderer fails when it cannot find
// one: a skip would count an untested path as passing.
const (
	kustomizeEnv = "KUSTOMIZE"
	helmEnv      = "HELM"
)

// useRenderers puts the real kustomize and helm, and nothing else, on the test's PATH
// under the names Render looks up, so Render finds exactly these binaries.
func useRenderers(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []struct{ name, env string }{{kustomizeBinary, kustomizeEnv}, {helmBinary, helmEnv}} {
		path := rendererPath(t, tool.name, tool.env)
		if err := os.Symlink(path, filepath.Join(bin, tool.name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
}

// rendererPath is the absolute path of the binary named by $env, or of name on PATH when
// $env is unset.
func rendererPath(t *testing.T, name, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		found, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("the renderer tests need %s: %s is not set and %s is not on PATH; run `make test-unit` (it builds the pinned %s into bin/), or set %s to a %s binary", name, env, name, name, env, name)
		}
		path = found
	}
	path, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("%s (%s): %v", name, path, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s (%s) is not an executable file", name, path)
	}
	return path
}
