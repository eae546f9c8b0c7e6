// Package ociimage builds the argocd-pull-addon image as an OCI image index (one image per
// platform) without a container engine, writes it as an OCI image layout and pushes that
// layout to a registry. What the image holds is decided here once: the static binary on an
// empty base, a CA bundle, a non-root user, the entrypoint and the OCI labels. The
// Dockerfile at the repository root builds the same image with a container engine.
package ociimage

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

const (
	// BinaryPath is where the binary lives in the image, and the entrypoint.
	BinaryPath = "/usr/local/bin/argocd-pull-addon"
	// CABundlePath is the first file Go's crypto/x509 reads on Linux for the system roots.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID of the user the image runs as: distroless's "nonroot", which the chart's
	// runAsNonRoot and any restricted Pod Security admission accept.
	UID = 65532
	GID = 65532
	// User is the config's User field.
	User = "65532:65532"
	// Title and License are the fixed OCI labels.
	Title   = "argocd-pull-addon"
	License = "Apache-2.0"
)

// OCI annotation keys used as image labels
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelVersion     = "org.opencontainers.image.version"
	LabelTitle       = "org.opencontainers.image.title"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelDescription = "org.opencontainers.image.description"
	// RefNameAnnotation names the index in the layout's index.json, so that
	// `skopeo copy oci:DIR:<version>` and `oras cp --from-oci-layout DIR:<version>` find it.
	RefNameAnnotation = "org.opencontainers.image.ref.name"
)

// Spec is what one image build takes.
type Spec struct {
	// Binaries maps a platform, "linux/amd64", to the path of the static binary built for it.
	Binaries map[string]string
	// CABundle is the PEM bundle installed at CABundlePath.
	CABundle []byte
	// Version, Revision and Source are the OCI labels of the same names: the version the
	// binary reports, the commit it was built from, the repository's URL.
	Version  string
	Revision string
	Source   string
	// Created is the images' creation time and the time of every file in them. Builds
	// with the same inputs and Created give the same digests.
	Created time.Time
}

// Validate reports what would make a broken or unlabelled image.
func (s Spec) Validate() error {
	var errs []error
	if len(s.Binaries) == 0 {
		errs = append(errs, errors.New("no binary given"))
	}
	for _, platform := range s.Platforms() {
		if _, _, err := SplitPlatform(platform); err != nil {
			errs = append(errs, err)
		}
		if info, err := os.Stat(s.Binaries[platform]); err != nil {
			errs = append(errs, fmt.Errorf("binary for %s: %w", platform, err))
		} else if !info.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("binary for %s: %s is not a regular file", platform, s.Binaries[platform]))
		}
	}
	if len(s.CABundle) == 0 {
		errs = append(errs, errors.New("empty CA bundle"))
	}
	for name, value := range map[string]string{"version": s.Version, "revision": s.Revision, "source": s.Source} {
		if value == "" {
			errs = append(errs, fmt.Errorf("empty %s", name))
		}
	}
	return errors.Join(errs...)
}

// Platforms are the spec's platforms, sorted, so the index lists them in a stable order.
func (s Spec) Platforms() []string {
	platforms := make([]string, 0, len(s.Binaries))
	for platform := range s.Binaries {
		platforms = append(platforms, platform)
	}
	slices.Sort(platforms)
	return platforms
}

// Labels are the OCI labels of every image of the index.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		LabelSource:      s.Source,
		LabelRevision:    s.Revision,
		LabelVersion:     s.Version,
		LabelTitle:       Title,
		LabelLicenses:    License,
		LabelDescription: "Argo CD pull model for Open Cluster Management: hub manager and managed-cluster agent",
	}
}

// SplitPlatform splits "os/arch" into its parts; only linux images are built.
func SplitPlatform(platform string) (goos, goarch string, err error) {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok || goos != "linux" || goarch == "" || strings.Contains(goarch, "/") {
		return "", "", fmt.Errorf("platform %q is not linux/<arch>", platform)
	}
	return goos, goarch, nil
}
