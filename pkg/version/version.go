// Package version holds the build's version, set at link time.
package version

import (
	"fmt"
	"runtime"
)

// These are set with -ldflags "-X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Version=...".
var (
	Version = "dev"
	Commit  = "unknown"
)

// String is the one-line version the `version` subcommand prints.
func String() string {
	return fmt.Sprintf("argocd-pull-addon %s (commit %s, %s, %s/%s)", Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
