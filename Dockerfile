# One small, non-root image with the argocd-pull-addon binary (manager and agent), for
# every platform buildx targets (docker buildx build --platform linux/amd64,linux/arm64).
# `make image` builds the same image without a container engine (hack/imagebuilder): the
# same static binary and ldflags, user 65532, entrypoint and OCI labels; a test there
# (dockerfile_test.go) holds the two together.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
COPY manifests/ manifests/
ARG VERSION=dev
ARG COMMIT=unknown
# Set by buildx from --platform; the build stage runs natively and cross-compiles.
ARG TARGETOS=linux
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Version=${VERSION} -X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Commit=${COMMIT}" \
      -o /out/argocd-pull-addon ./cmd/argocd-pull-addon

# distroless static: no shell or libc; CA certificates, /etc/passwd with nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.source="https://github.com/open-cluster-management-io/argocd-pull-addon" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.title="argocd-pull-addon" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.description="Argo CD pull model for Open Cluster Management: hub manager and managed-cluster agent"
COPY --from=build /out/argocd-pull-addon /usr/local/bin/argocd-pull-addon
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/argocd-pull-addon"]
