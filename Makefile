# argocd-pull-addon — build, generate, verify and test.
# `make help` lists the targets.

GO ?= go
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Read once per run: the image's labels, its binary and the test that compares them must
# agree even when a commit lands while `make test` runs.
VERSION := $(VERSION)
COMMIT := $(COMMIT)
LDFLAGS := -s -w \
	-X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Version=$(VERSION) \
	-X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Commit=$(COMMIT)

CONTROLLER_GEN_VERSION := v0.19.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
CRD_DIR := charts/argocd-pull-integration/files/crds

# The API server binaries the tests run against, built from the Go module proxy.
ENVTEST_ASSETS := $(BIN)/envtest

# The renderers `cmp generate` runs for Kustomize and Helm sources (pkg/hub/cmp), built from
# the Go module proxy so that pkg/hub/cmp's tests run the real tools, not stand-ins. Kustomize
# v5.7.1 is the release built on kustomize/api v0.20.1, the version our go.mod and
# hack/argocd's Argo CD v3.2.11 link; Helm is the version of our go.mod's helm.sh/helm/v3,
# whose engine the chart tests use.
KUSTOMIZE_VERSION := v5.7.1
KUSTOMIZE := $(BIN)/kustomize-$(KUSTOMIZE_VERSION)
HELM_VERSION := v3.19.5
HELM := $(BIN)/helm-$(HELM_VERSION)
# What Helm's own release build stamps (its Makefile's LDFLAGS): the version `helm version`
# prints, and the Kubernetes version `helm template` renders as .Capabilities.KubeVersion,
# 1.(minor of its k8s.io/client-go): v0.34 for Helm v3.19.5. Without them a `go install`ed
# helm says v3.19 and Kubernetes v1.20.
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=34 \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=34
# How pkg/hub/cmp's tests find them (pkg/hub/cmp/tools_test.go); they fail when these are unset
# and neither tool is on PATH.
RENDERER_ENV := KUSTOMIZE=$(KUSTOMIZE) HELM=$(HELM)

# OCM's clusteradm, which the e2e suite runs for real: `install hub-addon --names argocd`
# against the chart served as the `ocm` Helm repository (make chart-repo), `addon enable`
# and `addon disable` against the fleet. Built from the Go module proxy by
# hack/build-clusteradm.sh (which says why and when it has to replace a dependency).
CLUSTERADM_VERSION := v1.3.1
CLUSTERADM := $(BIN)/clusteradm-$(CLUSTERADM_VERSION)

# Debian's redis-server (Argo CD's Redis in the fleet and the sandbox; the agent's
# integration tests read resource trees from it), unpacked from the redis-tools package
# into bin/ by hack/fetch-redis.sh instead of installing Debian's redis-server package,
# which would also enable a system Redis service on port 6379. The tests find it through
# REDIS_SERVER (test/framework/redis.go). REDIS_VERSION is Debian 12's; the script says
# which to set on a Debian that ships another.
REDIS_VERSION ?= 7.0.15
REDIS_DIR := $(BIN)/redis-$(REDIS_VERSION)
REDIS_SERVER := $(REDIS_DIR)/redis-server
REDIS_ENV := REDIS_SERVER=$(REDIS_SERVER)

# `make chart-repo` packages the hub chart and writes a Helm repository index next to it:
# a directory any static HTTP server can host, to be added as the `ocm` repository that
# `clusteradm install hub-addon --names argocd` installs from (README, "Install on an OCM
# hub"). CHART_REPO_URL, when set, is written into the index as the charts' absolute URL;
# unset, the index names them relative to wherever the directory is served.
CHART_DIR := charts/argocd-pull-integration
CHART_REPO_DIR ?= $(CURDIR)/_output/chart-repo
CHART_REPO_URL ?=

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Build

# The one way the shipped binary is built: static, stripped, trimmed paths, version stamped.
# `build`, `image` (and the Dockerfile, with the same flags) use it.
GO_BUILD_BINARY := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)"

.PHONY: build
build: ## Build bin/argocd-pull-addon (stripped, trimmed paths).
	$(GO_BUILD_BINARY) -o $(BIN)/argocd-pull-addon ./cmd/argocd-pull-addon

##@ Image

# The image `make image` builds without a container engine (hack/imagebuilder): the static
# binary per platform on an empty base with a CA bundle, user 65532, the OCI labels below;
# written as an OCI image layout into IMAGE_DIR, which `make push`, crane, skopeo or oras push.
# Its files and config are dated SOURCE_DATE_EPOCH (the commit's time), so a commit builds
# the same digests on any machine with the same Go.
IMAGE_DIR ?= $(BIN)/image
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_SOURCE ?= https://github.com/open-cluster-management-io/argocd-pull-addon
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
IMAGE_BINARIES := $(BIN)/image-binaries

.PHONY: image
image: ## Build the multi-platform OCI image (IMAGE_PLATFORMS) into the OCI layout IMAGE_DIR, without Docker.
	@rm -rf $(IMAGE_BINARIES)
	@set -e; for platform in $(IMAGE_PLATFORMS); do \
		echo "building argocd-pull-addon $(VERSION) for $$platform"; \
		GOOS=$${platform%/*} GOARCH=$${platform#*/} $(GO_BUILD_BINARY) \
			-o $(IMAGE_BINARIES)/$${platform/\//-}/argocd-pull-addon ./cmd/argocd-pull-addon; \
	done
	$(GO) -C hack/imagebuilder run . build --out $(abspath $(IMAGE_DIR)) \
		$(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(IMAGE_BINARIES)/$(subst /,-,$(p))/argocd-pull-addon) \
		--version $(VERSION) --revision $(COMMIT) --source $(IMAGE_SOURCE) --created $(SOURCE_DATE_EPOCH)

# The image's tests: the builder's unit tests (an in-process registry on 127.0.0.1 for
# push), then the image `make image` just built, unpacked, its config checked and its
# binary run (`version` must report the image's version and revision labels).
.PHONY: test-image
test-image: image ## Build the image, then test the builder and the built image (its config, files, and its binary run).
	$(GO) -C hack/imagebuilder vet -tags builtimage ./...
	IMAGE_LAYOUT=$(abspath $(IMAGE_DIR)) IMAGE_VERSION=$(VERSION) IMAGE_REVISION=$(COMMIT) \
		$(GO) -C hack/imagebuilder test -tags builtimage ./... -count=1 -v

.PHONY: push
push: ## Push the image `make image` wrote to IMG=registry/repository:tag (credentials: ~/.docker/config.json).
	@if [ -z "$(IMG)" ]; then echo "usage: make push IMG=registry/repository:tag" >&2; exit 2; fi
	$(GO) -C hack/imagebuilder run . push --layout $(abspath $(IMAGE_DIR)) --image $(IMG)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and CRD manifests from pkg/apis.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	$(CONTROLLER_GEN) crd paths=./pkg/apis/... output:crd:artifacts:config=$(CRD_DIR)

.PHONY: manifests
manifests: generate ## Alias of generate (CRDs are the only generated manifests).

.PHONY: verify
verify: $(CONTROLLER_GEN) fmt-check ## Fail when generated files are stale (regenerates and compares), Go files are not gofmt'ed or an import crosses the layout's boundaries (hack/verify-imports.sh).
	@before=$$(mktemp -d); trap 'rm -rf "$$before"' EXIT; \
	mkdir -p "$$before/apis" "$$before/crds"; \
	cp -r pkg/apis/. "$$before/apis"; cp -r $(CRD_DIR)/. "$$before/crds"; \
	$(MAKE) --no-print-directory generate >/dev/null; \
	if ! diff -r "$$before/apis" pkg/apis >/dev/null || ! diff -r "$$before/crds" $(CRD_DIR) >/dev/null; then \
		echo "Generated files were stale and have been regenerated; review and commit them:"; \
		diff -r "$$before/apis" pkg/apis | head -40; diff -r "$$before/crds" $(CRD_DIR) | head -40; exit 1; fi
	@GO=$(GO) ./hack/verify-imports.sh

.PHONY: docs
docs: ## Regenerate the reference pages from the code and the chart (docs/reference/flags.md, chart-values.md); `go test ./test/docs` fails when they are stale.
	$(GO) test ./test/docs -run '^TestGeneratedReferenceIsCurrent$$' -count=1 -args -update

.PHONY: verify-imports
verify-imports: ## Fail when an import crosses the layout's boundaries or a hub reconciler depends on another (tests included).
	@GO=$(GO) ./hack/verify-imports.sh

.PHONY: fmt-check
fmt-check: ## Fail when a Go file is not gofmt'ed.
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## Run go vet, also with -tags e2e (the e2e suites and their helpers), and on hack/imagebuilder.
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(GO) -C hack/imagebuilder vet -tags builtimage ./...

.PHONY: lint
lint: fmt-check vet ## gofmt and go vet.

.PHONY: helm-lint
helm-lint: ## Lint the hub chart with Helm's lint package, check its values schema and that its version follows its CRDs and RBAC (test/chart).
	$(GO) test ./test/chart -count=1

##@ Test

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kube-controller-manager into bin/envtest (cached; cold ~8 min).
	GO=$(GO) ./hack/build-envtest.sh --with-controller-manager

.PHONY: argocd
argocd: ## Build the Argo CD v3 components the fleet tests run into bin/argocd (cached; cold ~8 min).
	GO=$(GO) ./hack/build-argocd.sh

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Build kustomize into bin/ for pkg/hub/cmp's tests (cached).

.PHONY: helm
helm: $(HELM) ## Build helm into bin/ for pkg/hub/cmp's tests (cached).

.PHONY: redis
redis: $(REDIS_SERVER) ## Unpack Debian's redis-server into bin/ for the fleet and the agent's tests (cached; no package or service installed).

.PHONY: clusteradm
clusteradm: $(CLUSTERADM) ## Build OCM's clusteradm into bin/ for the e2e suite (cached; cold several minutes).

.PHONY: test
test: verify vet envtest argocd debian-packages $(REDIS_SERVER) $(KUSTOMIZE) $(HELM) $(CLUSTERADM) test-image ## Everything: verify, vet, unit and integration tests on real API servers, the Argo CD smoke test, the e2e suite and a short chaos run on a real fleet.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(RENDERER_ENV) $(REDIS_ENV) $(GO) test ./... -count=1 -timeout 30m
	$(MAKE) --no-print-directory test-argocd-smoke test-e2e test-fleet-faults
	$(MAKE) --no-print-directory chaos CHAOS_ARGS='$(CHAOS_SHORT_ARGS)'

# Debian packages the tests need and a fresh Debian machine may lack: git (Argo CD's
# repo-server reads a local git repository) and iproute2 (`ip` sets up the loopback of the
# private network namespace the fleet runs in). Redis is not one of them: see REDIS_SERVER.
.PHONY: debian-packages
debian-packages:
	@missing=""; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The smoke test of the real Argo CD harness (test/fleet), compiled once and run inside a
# private network namespace (`unshare --net`; the test sets lo up itself): Argo CD's
# application-controller binds its metrics port on all interfaces. Behind the e2e build
# tag, so not part of `go test ./...`; `make test` runs it after the Go tests.
ARGOCD_SMOKE_TEST := $(BIN)/argocd-smoke.test

.PHONY: test-argocd-smoke
test-argocd-smoke: envtest argocd debian-packages $(REDIS_SERVER) ## Smoke-test real Argo CD v3 (bin/argocd) on an envtest API server, in a private network namespace.
	$(GO) test -c -tags e2e -o $(ARGOCD_SMOKE_TEST) ./test/e2e/argocd
	cd test/e2e/argocd && KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(REDIS_ENV) \
		unshare --net $(ARGOCD_SMOKE_TEST) -test.v -test.timeout 15m -ginkgo.v $(ARGOCD_SMOKE_ARGS)

# The smoke test of the OCM fleet (test/fleet) alone: a hub and two managed clusters, each
# its own kube-apiserver, etcd and kube-controller-manager, joined with real OCM run
# in-process. `make test` runs it too; this prints how long the fleet took to come up.
.PHONY: test-fleet-smoke
test-fleet-smoke: envtest ## Smoke-test the OCM fleet alone: hub + 2 clusters join with real OCM.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test ./test/fleet -count=1 -timeout 10m -v \
		-args -ginkgo.label-filter=ocm $(FLEET_SMOKE_ARGS)

# The fleet's fault-injection primitives (test/fleet/faults_test), which the chaos run
# uses: leader takeover after a SIGKILL, an agent killed and restarted, an agent's hub link
# cut, a hub kube-apiserver outage on the same etcd. Behind the e2e build tag, in a private
# network namespace; under 3 minutes.
.PHONY: test-fleet-faults
test-fleet-faults: envtest argocd debian-packages $(REDIS_SERVER) ## Test the fleet's fault injection (kills, hub outage, link cut) on a real fleet.
	$(GO) build -o $(E2E_AGENT_BINARY) ./cmd/argocd-pull-addon
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(REDIS_ENV) ARGOCD_PULL_ADDON_BINARY=$(E2E_AGENT_BINARY) \
		$(GO) test -tags e2e ./test/fleet/faults_test -count=1 -timeout 10m -v

.PHONY: test-unit
test-unit: $(KUSTOMIZE) $(HELM) ## Unit tests only (no API server; pkg/hub/cmp runs the real kustomize and helm).
	$(RENDERER_ENV) $(GO) test ./pkg/... ./cmd/... -count=1

$(CONTROLLER_GEN):
	mkdir -p $(BIN)/tmp
	GOBIN=$(BIN)/tmp $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/tmp/controller-gen $@

# Built into a private temporary directory next to the target and moved into place: bin/
# may be shared by several checkouts building at once, and a half-written binary must never
# carry the versioned name that marks it built. `go install module/cmd@version` resolves
# the tool's own go.mod, not ours.
$(KUSTOMIZE):
	@mkdir -p $(BIN)
	@tmp=$$(mktemp -d $(BIN)/.build-kustomize.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	echo "building kustomize $(KUSTOMIZE_VERSION) into $@"; \
	GOBIN=$$tmp $(GO) install -trimpath -ldflags "-s -w" sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION) && \
	mv "$$tmp/kustomize" $@

$(HELM):
	@mkdir -p $(BIN)
	@tmp=$$(mktemp -d $(BIN)/.build-helm.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	echo "building helm $(HELM_VERSION) into $@"; \
	GOBIN=$$tmp $(GO) install -trimpath -ldflags "$(HELM_LDFLAGS)" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) && \
	mv "$$tmp/helm" $@

$(CLUSTERADM):
	GO=$(GO) ./hack/build-clusteradm.sh $(CLUSTERADM_VERSION) $@

$(REDIS_SERVER):
	./hack/fetch-redis.sh $(REDIS_VERSION) $(REDIS_DIR)

##@ Release

.PHONY: chart-repo
chart-repo: $(HELM) ## Package the hub chart into a Helm repository directory (CHART_REPO_DIR, default _output/chart-repo) to serve as the `ocm` repository.
	@mkdir -p $(CHART_REPO_DIR)
	$(HELM) package $(CHART_DIR) --destination $(CHART_REPO_DIR)
	$(HELM) repo index $(CHART_REPO_DIR) $(if $(CHART_REPO_URL),--url $(CHART_REPO_URL))
	@echo "Helm repository in $(CHART_REPO_DIR): serve it over HTTP and add it as ocm (README, \"Install on an OCM hub\")."

##@ Sandbox

# The README's first command: a hub and managed clusters, each its own
# kube-apiserver, etcd and kube-controller-manager, joined with real OCM; real Argo CD;
# argocd-pull-addon's manager and agents; the guestbook example applied and its report
# printed. It runs until Ctrl-C and then stops everything it started. SANDBOX_ARGS: e.g.
# --clusters 3, --dir sandbox --keep, --timeout 15m.
SANDBOX_ARGS ?=

.PHONY: kubectl
kubectl: ## Build kubectl into bin/envtest, the API servers' Kubernetes release (cached; cold ~2 min).
	GO=$(GO) ./hack/build-envtest.sh --with-controller-manager --with-kubectl

.PHONY: sandbox
sandbox: build argocd kubectl debian-packages $(REDIS_SERVER) ## Run a fleet with the guestbook example and print its report; Ctrl-C stops and removes everything.
	$(GO) build -o $(BIN)/sandbox ./test/tools/sandbox
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(REDIS_ENV) ARGOCD_PULL_ADDON_BINARY=$(BIN)/argocd-pull-addon $(BIN)/sandbox $(SANDBOX_ARGS)

##@ Run

.PHONY: run
run: envtest ## Start a local hub API server with all CRDs and run the manager against it (Ctrl-C stops).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./test/tools/devhub

# The scale benchmark (test/tools/bench-scale, docs/benchmarks.md): one real hub API server, simulated
# spokes, the manager binary as a process of its own; prints the figures of
# docs/benchmarks.md. Takes minutes per size and run; run it on a quiet machine.
BENCH_SCALE_ARGS ?= --clusters 100,300,1000 --appsets 10 --runs 3 --churn 50 --idle 60s
.PHONY: bench-scale
bench-scale: envtest ## Scale benchmark: propagation, freshness, manager RSS/CPU, API writes per size (BENCH_SCALE_ARGS).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./test/tools/bench-scale $(BENCH_SCALE_ARGS)

# The chaos harness (test/chaos, docs/reliability.md): a seeded random sequence of
# operations and faults on a fleet of a hub and three clusters, with invariants checked
# after every quiet period. CHAOS_ARGS go to the test binary: --ops, --seed (printed by
# every run; the same seed replays the same operations), --quiet-every, --fault-every,
# --convergence-bound. `make test` runs the short one with a fixed seed;
# CHAOS_KEEP_DIR=1 keeps the fleet's logs after a passing run.
CHAOS_TEST := $(BIN)/chaos.test
CHAOS_ARGS ?= --ops 500
CHAOS_SHORT_ARGS ?= --ops 100 --seed 1

.PHONY: chaos
chaos: envtest argocd debian-packages $(REDIS_SERVER) ## Chaos run on a real fleet: seeded operations and faults, invariants (CHAOS_ARGS='--ops 500 --seed N').
	$(GO) build -o $(E2E_AGENT_BINARY) ./cmd/argocd-pull-addon
	$(GO) test -c -tags e2e -o $(CHAOS_TEST) ./test/chaos
	cd test/chaos && KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(REDIS_ENV) ARGOCD_PULL_ADDON_BINARY=$(E2E_AGENT_BINARY) \
		$(CHAOS_TEST) -test.v -test.timeout 3h $(CHAOS_ARGS)

# The end-to-end suite (test/e2e/pull) on a real fleet: a hub and three
# clusters with real OCM, real Argo CD v3 (on two clusters, and on the hub with our Config
# Management Plugin), the hub chart, and our manager and agents as processes of the built
# binary. Behind the e2e build tag, so not part of `go test ./...` (`make test` runs it
# after the Go tests); the test binary re-executes itself in a private network namespace
# (needs root and iproute2).
# E2E_ARGS go to the test binary (e.g. -ginkgo.focus=guestbook); E2E_KEEP_DIR=1 keeps the
# fleet's logs after a passing run.
# The install scenario (install_test.go) follows the README's install section: the chart
# repository `make chart-repo` writes (into a fresh directory, so no package of another
# chart version is listed next to this one), helm to add it as `ocm`, and clusteradm.
E2E_TEST := $(BIN)/e2e-pull.test
E2E_AGENT_BINARY := $(BIN)/e2e/argocd-pull-addon
E2E_CHART_REPO := $(BIN)/e2e/chart-repo

.PHONY: test-e2e
test-e2e: envtest argocd debian-packages $(REDIS_SERVER) $(HELM) $(CLUSTERADM) ## End-to-end suite on a real OCM fleet with real Argo CD and our binary.
	$(GO) build -o $(E2E_AGENT_BINARY) ./cmd/argocd-pull-addon
	rm -rf $(E2E_CHART_REPO)
	$(MAKE) --no-print-directory chart-repo CHART_REPO_DIR=$(E2E_CHART_REPO) CHART_REPO_URL=
	$(GO) test -c -tags e2e -o $(E2E_TEST) ./test/e2e/pull
	cd test/e2e/pull && KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(REDIS_ENV) ARGOCD_PULL_ADDON_BINARY=$(E2E_AGENT_BINARY) \
		HELM=$(HELM) CLUSTERADM=$(CLUSTERADM) CHART_REPO_DIR=$(E2E_CHART_REPO) \
		$(E2E_TEST) -test.v -test.timeout 20m -ginkgo.v $(E2E_ARGS)
