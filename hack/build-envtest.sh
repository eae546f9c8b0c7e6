#!/usr/bin/env bash
# Builds the API server binaries the tests run against (kube-apiserver, etcd and, when
# asked, kube-controller-manager) from the Go module proxy into bin/envtest.
# A build is skipped when bin/envtest/.inputs matches the hash of the wrapper module, so
# a cold build (~5 min on 2 cores) happens once per change of hack/envtest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/hack/envtest"
out="$root/bin/envtest"
go=${GO:-go}

want=("kube-apiserver" "etcd")
if [[ "${1:-}" == "--with-controller-manager" ]]; then
	want+=("kube-controller-manager")
fi

inputs=$(cat "$src/go.mod" "$src/go.sum" "$src/etcd/main.go" | sha256sum | cut -d' ' -f1)
mkdir -p "$out"
if [[ -f "$out/.inputs" && "$(cat "$out/.inputs")" != "$inputs" ]]; then
	echo "hack/envtest changed: rebuilding API server binaries"
	rm -f "$out"/kube-apiserver "$out"/etcd "$out"/kube-controller-manager
fi

cd "$src"
for bin in "${want[@]}"; do
	[[ -x "$out/$bin" ]] && continue
	echo "building $bin into bin/envtest (cold: several minutes)"
	case "$bin" in
	etcd) pkg=./etcd ;;
	*) pkg="k8s.io/kubernetes/cmd/$bin" ;;
	esac
	# One link at a time: each takes ~2 GiB of memory.
	"$go" build -trimpath -ldflags "-s -w" -o "$out/$bin" "$pkg"
done
echo "$inputs" > "$out/.inputs"
