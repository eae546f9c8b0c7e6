package cmp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateCommand runs `cmp generate` as Argo CD does: in the source path, with the
// build environment, the ManifestWork on stdout.
func TestGenerateCommand(t *testing.T) {
	for k, v := range guestbookEnv() {
		t.Setenv(k, v)
	}
	t.Chdir(filepath.Join("testdata", "plain", "source"))
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"generate"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "manifestwork.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("stdout differs from testdata/plain/manifestwork.golden:\n%s", out.String())
	}
}

func TestGenerateCommandFailsWithoutArgoCD(t *testing.T) {
	t.Setenv(EnvAppName, "")
	cmd := NewCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"generate"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), EnvAppName) {
		t.Errorf("error = %v, want one naming %s", err, EnvAppName)
	}
}
