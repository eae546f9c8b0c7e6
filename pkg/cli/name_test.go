package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommandName(t *testing.T) {
	tests := map[string]string{
		"argocd-pull-addon":                  BinaryName,
		"/usr/local/bin/argocd-pull-addon":   BinaryName,
		"./bin/argocd-pull-addon":            BinaryName,
		"/home/me/bin/kubectl-argocd_pull":   PluginCommand,
		"kubectl-argocd_pull":                PluginCommand,
		"kubectl-argocd_pull.exe":            PluginCommand,
		"/usr/local/bin/kubectl-argocd-pull": BinaryName, // kubectl never runs this name for `kubectl argocd-pull`
		"/tmp/go-build123/b001/exe/main":     BinaryName, // go run
	}
	for argv0, want := range tests {
		if got := CommandName(argv0); got != want {
			t.Errorf("CommandName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// helpOf is what `<binary> args... --help` prints for the binary run from argv0.
func helpOf(t *testing.T, argv0 string, args ...string) string {
	t.Helper()
	root := NewRootCommandAs(argv0)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--help"))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestHelpNamesThePluginAsKubectlRunsIt(t *testing.T) {
	tests := map[string][]string{
		"":       {"Usage:\n  kubectl argocd-pull [command]", `Use "kubectl argocd-pull [command] --help"`},
		"report": {"Usage:\n  kubectl argocd-pull report [APPLICATIONSET]", "  kubectl argocd-pull report guestbook-app -n argocd"},
	}
	for command, wants := range tests {
		args := strings.Fields(command)
		help := helpOf(t, "/usr/local/bin/kubectl-argocd_pull", args...)
		for _, want := range wants {
			if !strings.Contains(help, want) {
				t.Errorf("help of %v as the plugin has no %q:\n%s", args, want, help)
			}
		}
		if strings.Contains(help, "argocd-pull-addon") {
			t.Errorf("help of %v as the plugin names argocd-pull-addon:\n%s", args, help)
		}
	}
}

func TestHelpNamesTheBinary(t *testing.T) {
	help := helpOf(t, "/usr/local/bin/argocd-pull-addon", "report")
	for _, want := range []string{"Usage:\n  argocd-pull-addon report", "  argocd-pull-addon report guestbook-app -n argocd"} {
		if !strings.Contains(help, want) {
			t.Errorf("help has no %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "kubectl argocd-pull") {
		t.Errorf("help of the binary names the plugin:\n%s", help)
	}
}

func TestThePluginHasTheSameCommands(t *testing.T) {
	names := func(argv0 string) []string {
		var out []string
		for _, c := range NewRootCommandAs(argv0).Commands() {
			out = append(out, c.Name())
		}
		return out
	}
	binary, plugin := names(BinaryName), names(PluginFileName)
	if strings.Join(binary, " ") != strings.Join(plugin, " ") {
		t.Errorf("commands of the binary %v, of the plugin %v", binary, plugin)
	}
}
