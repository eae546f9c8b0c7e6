# One small, non-root image with the argocd-pull-addon binary (manager and agent).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
COPY manifests/ manifests/
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Version=${VERSION} -X github.com/open-cluster-management-io/argocd-pull-addon/pkg/version.Commit=${COMMIT}" \
      -o /out/argocd-pull-addon ./cmd/argocd-pull-addon

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/argocd-pull-addon /usr/local/bin/argocd-pull-addon
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/argocd-pull-addon"]
