package cli

import (
	"path/filepath"
	"strings"
)

const (
	// BinaryName is the binary's own name.
	BinaryName = "argocd-pull-addon"
	// PluginFileName is the file name under which kubectl runs the binary as its plugin
	// `kubectl argocd-pull` (kubectl looks up `kubectl-<name>` on PATH, a "-" of the
	// command written "_" in the file name).
	PluginFileName = "kubectl-argocd_pull"
	// PluginCommand is how a user invokes the plugin.
	PluginCommand = "kubectl argocd-pull"
)

// CommandName is how the user invoked the binary run from file argv0 (os.Args[0]):
// PluginCommand when the file is named PluginFileName (a copy or symlink on PATH), else
// BinaryName.
func CommandName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if base == PluginFileName {
		return PluginCommand
	}
	return BinaryName
}
