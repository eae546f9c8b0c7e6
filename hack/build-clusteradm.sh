#!/usr/bin/env bash
# Builds OCM's clusteradm at a release tag from the Go module proxy into bin/, for the
# e2e suite (`clusteradm install hub-addon`, `clusteradm addon enable|disable`, run for
# real) and for users following the README. Usage: build-clusteradm.sh VERSION OUTPUT.
#
# `go install open-cluster-management.io/clusteradm/cmd/clusteradm@VERSION` is the
# ordinary way, and the first thing tried. Where it fails it is for one of two reasons this
# script works around, each visible in its output:
#   - the proxy refuses to list open-cluster-management.io/* versions, and `go install
#     pkg@version` asks for that list (to check the module's deprecation);
#   - the proxy refuses the zip of open-cluster-management.io/ocm at the version clusteradm
#     requires. clusteradm imports one package of it, pkg/operator/helpers/chart (the
#     cluster-manager and klusterlet charts that `clusteradm init` and `join` render),
#     which `install hub-addon` and `addon enable|disable` never call. The build then
#     replaces ocm with OCM_FALLBACK_VERSION (the version this module's go.mod uses; its
#     chart package has the same API) and says so.
# The module zip carries no vendor/ directory (Go leaves it out of module zips), so the
# fallback builds with -mod=mod from a writable copy of the downloaded source.
# The binary is built in a temporary directory next to OUTPUT and moved into place, so a
# half-written binary never carries the versioned name that marks it built.
set -euo pipefail

version=${1:?usage: $0 VERSION OUTPUT}
output=${2:?usage: $0 VERSION OUTPUT}
go=${GO:-go}
ocm_fallback=${OCM_FALLBACK_VERSION:-v1.2.1}
module=open-cluster-management.io/clusteradm
ldflags="-s -w -X $module/pkg/version.versionFromGit=$version"

mkdir -p "$(dirname "$output")"
tmp=$(mktemp -d "$(dirname "$output")/.build-clusteradm.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

echo "building clusteradm $version into $output (several minutes; ~2.5 GB RAM at link)"
if GOBIN="$tmp/bin" "$go" install -trimpath -ldflags "$ldflags" "$module/cmd/clusteradm@$version" 2>"$tmp/install.log"; then
	mv "$tmp/bin/clusteradm" "$output"
	exit 0
fi
echo "go install $module/cmd/clusteradm@$version failed; building from the module's source instead:"
sed 's/^/  /' "$tmp/install.log"

"$go" mod download "$module@$version"
dir="$("$go" env GOMODCACHE)/$module@$version"
cp -r "$dir" "$tmp/src"
chmod -R u+w "$tmp/src"
cd "$tmp/src"
ocm=$("$go" list -m -f '{{.Version}}' open-cluster-management.io/ocm)
if ! "$go" mod download "open-cluster-management.io/ocm@$ocm" 2>/dev/null; then
	echo "open-cluster-management.io/ocm@$ocm is not obtainable here: replacing it with $ocm_fallback (only clusteradm init/join use it)"
	"$go" mod edit -replace "open-cluster-management.io/ocm=open-cluster-management.io/ocm@$ocm_fallback"
fi
GOFLAGS=-mod=mod "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/clusteradm" ./cmd/clusteradm
mv "$tmp/clusteradm" "$output"
