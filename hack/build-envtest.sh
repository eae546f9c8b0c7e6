#!/usr/bin/env bash
# Builds the API server binaries the tests run against (kube-apiserver, etcd and, when
# asked, kube-controller-manager) from the Go module proxy into bin/envtest; with
# --with-kubectl also kubectl, for the sandbox's users (the same Kubernetes release).
# A build is skipped when bin/envtest/.inputs matches the hash of the wrapper module, so
# a cold build (~5 min on 2 cores) happens once per change of hack/envtest. kubectl needs
# modules the servers do not: it builds with hack/envtest/kubectl.mod (go.mod plus those),
# stamped apart in bin/envtest/.kubectl-inputs, so that adding it changes nothing for the
# servers.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/hack/envtest"
out="$root/bin/envtest"
go=${GO:-go}

want=("kube-apiserver" "etcd")
for arg in "$@"; do
	case "$arg" in
	--with-controller-manager) want+=("kube-controller-manager") ;;
	--with-kubectl) want+=("kubectl") ;;
	*)
		echo "usage: $0 [--with-controller-manager] [--with-kubectl]" >&2
		exit 2
		;;
	esac
done

inputs=$(cat "$src/go.mod" "$src/go.sum" "$src/etcd/main.go" | sha256sum | cut -d' ' -f1)
mkdir -p "$out"
if [[ -f "$out/.inputs" && "$(cat "$out/.inputs")" != "$inputs" ]]; then
	echo "hack/envtest changed: rebuilding API server binaries"
	rm -f "$out"/kube-apiserver "$out"/etcd "$out"/kube-controller-manager
fi
kubectl_inputs=$(cat "$src/kubectl.mod" "$src/kubectl.sum" | sha256sum | cut -d' ' -f1)
if [[ -f "$out/.kubectl-inputs" && "$(cat "$out/.kubectl-inputs")" != "$kubectl_inputs" ]]; then
	echo "hack/envtest/kubectl.mod changed: rebuilding kubectl"
	rm -f "$out"/kubectl
fi

cd "$src"
for bin in "${want[@]}"; do
	[[ -x "$out/$bin" ]] && continue
	echo "building $bin into bin/envtest (cold: several minutes)"
	modfile=go.mod
	case "$bin" in
	etcd) pkg=./etcd ;;
	kubectl) pkg="k8s.io/kubernetes/cmd/kubectl" modfile=kubectl.mod ;;
	*) pkg="k8s.io/kubernetes/cmd/$bin" ;;
	esac
	# One link at a time: each takes ~2 GiB of memory.
	"$go" build -modfile="$modfile" -trimpath -ldflags "-s -w" -o "$out/$bin" "$pkg"
	if [[ "$bin" == kubectl ]]; then
		echo "$kubectl_inputs" > "$out/.kubectl-inputs"
	fi
done
echo "$inputs" > "$out/.inputs"
