package ociimage

import (
	"archive/tar"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Helpers shared by the unit tests and the test of the image `make image` built
// (built_image_test.go): what every image of the index must be.

// file is one entry of an image's flattened filesystem.
type file struct {
	header  tar.Header
	content []byte
}

// platformImages returns the index's images by "os/arch", failing on anything but OCI
// image manifests with a platform.
func platformImages(t *testing.T, index v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	if mt, err := index.MediaType(); err != nil || mt != types.OCIImageIndex {
		t.Fatalf("index media type = %q (%v), want %q", mt, err, types.OCIImageIndex)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatalf("reading the index manifest: %v", err)
	}
	images := map[string]v1.Image{}
	for _, desc := range manifest.Manifests {
		if desc.MediaType != types.OCIManifestSchema1 || desc.Platform == nil {
			t.Fatalf("index entry %s: media type %q, platform %v; want an OCI image manifest with a platform", desc.Digest, desc.MediaType, desc.Platform)
		}
		image, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatalf("reading image %s: %v", desc.Digest, err)
		}
		images[desc.Platform.OS+"/"+desc.Platform.Architecture] = image
	}
	return images
}

// expectConfig checks an image's config: platform, user, entrypoint and labels.
func expectConfig(t *testing.T, image v1.Image, platform string, wantLabels map[string]string) {
	t.Helper()
	config, err := image.ConfigFile()
	if err != nil {
		t.Fatalf("%s: reading the config: %v", platform, err)
	}
	if got := config.OS + "/" + config.Architecture; got != platform {
		t.Errorf("%s: config platform = %s", platform, got)
	}
	if config.Config.User != "65532:65532" {
		t.Errorf("%s: User = %q, want 65532:65532", platform, config.Config.User)
	}
	if diff := cmp.Diff([]string{"/usr/local/bin/argocd-pull-addon"}, config.Config.Entrypoint); diff != "" {
		t.Errorf("%s: Entrypoint (-want +got):\n%s", platform, diff)
	}
	if len(config.Config.Cmd) != 0 {
		t.Errorf("%s: Cmd = %q, want none (the Deployments give the subcommand)", platform, config.Config.Cmd)
	}
	if diff := cmp.Diff(wantLabels, config.Config.Labels); diff != "" {
		t.Errorf("%s: labels (-want +got):\n%s", platform, diff)
	}
	if mt, err := image.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("%s: manifest media type = %q (%v)", platform, mt, err)
	}
}

// imageFiles flattens an image's layers into its files by path (no leading slash).
func imageFiles(t *testing.T, image v1.Image) map[string]file {
	t.Helper()
	stream := mutate.Extract(image)
	defer stream.Close()
	files := map[string]file{}
	archive := tar.NewReader(stream)
	for {
		header, err := archive.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading the image's filesystem: %v", err)
		}
		content, err := io.ReadAll(archive)
		if err != nil {
			t.Fatalf("reading %s: %v", header.Name, err)
		}
		files[header.Name] = file{header: *header, content: content}
	}
}

// expectFilesystem checks the files every image holds besides the binary, and that the
// binary is root-owned and executable by anyone; it returns the binary.
func expectFilesystem(t *testing.T, platform string, files map[string]file) []byte {
	t.Helper()
	for _, want := range []struct {
		path     string
		typeflag byte
		mode     int64
		uid      int
	}{
		{"etc/passwd", tar.TypeReg, 0o644, 0},
		{"etc/group", tar.TypeReg, 0o644, 0},
		{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0},
		{"home/nonroot", tar.TypeDir, 0o700, 65532},
		{"tmp", tar.TypeDir, 0o1777, 0},
		{"usr/local/bin/argocd-pull-addon", tar.TypeReg, 0o755, 0},
	} {
		got, ok := files[want.path]
		if !ok {
			t.Errorf("%s: /%s is missing", platform, want.path)
			continue
		}
		if got.header.Typeflag != want.typeflag || got.header.Mode != want.mode || got.header.Uid != want.uid {
			t.Errorf("%s: /%s: type %c mode %o uid %d, want type %c mode %o uid %d", platform, want.path,
				got.header.Typeflag, got.header.Mode, got.header.Uid, want.typeflag, want.mode, want.uid)
		}
	}
	if passwd := string(files["etc/passwd"].content); !slices.Contains(strings.Split(passwd, "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") {
		t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", platform, passwd)
	}
	if n := countCertificates(t, files["etc/ssl/certs/ca-certificates.crt"].content); n < 100 {
		t.Errorf("%s: the CA bundle holds %d certificates, want the NSS roots (over 100)", platform, n)
	}
	return files["usr/local/bin/argocd-pull-addon"].content
}

// countCertificates parses every PEM block of bundle as an X.509 certificate.
func countCertificates(t *testing.T, bundle []byte) int {
	t.Helper()
	n := 0
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(rest) != 0 {
				t.Errorf("%d bytes after the last PEM block of the CA bundle", len(rest))
			}
			return n
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("CA bundle block %d: %v", n, err)
		}
		n++
	}
}
