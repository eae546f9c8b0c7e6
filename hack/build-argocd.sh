#!/usr/bin/env bash
# Builds the Argo CD multi-call binary the fleet tests run (application-controller,
# repo-server, applicationset-controller, argocd-server; see hack/argocd/main.go) from the Go module proxy
# into bin/argocd/argocd. The component is chosen at run time by ARGOCD_BINARY_NAME.
# A build is skipped when bin/argocd/.inputs matches the hash of the wrapper module, so a
# cold build (~8 min and ~1.7 GiB at link on 2 busy cores) happens once per change of
# hack/argocd.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/hack/argocd"
out="$root/bin/argocd"
go=${GO:-go}

# The fleet tests read Argo CD's CRDs from its module (test/fleet ArgoCDV3CRDPaths) inside a
# private network namespace, where the module proxy is out of reach: make sure the module
# is in the cache even when the build itself is skipped (a no-op when it is).
(cd "$src" && "$go" mod download github.com/argoproj/argo-cd/v3)

inputs=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -d' ' -f1)
mkdir -p "$out"
if [[ -x "$out/argocd" && -f "$out/.inputs" && "$(cat "$out/.inputs")" == "$inputs" ]]; then
	exit 0
fi
echo "building Argo CD $(awk '/argoproj\/argo-cd\/v3 /{print $NF; exit}' "$src/go.mod") into bin/argocd (cold: several minutes)"
rm -f "$out/.inputs"
cd "$src"
start=$SECONDS
# One heavy link at a time on this machine: ~2.5 GiB of memory.
CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w" -o "$out/argocd.tmp" .
mv "$out/argocd.tmp" "$out/argocd"
echo "$inputs" > "$out/.inputs"
echo "built bin/argocd/argocd in $((SECONDS - start))s"
