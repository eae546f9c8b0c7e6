package ociimage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// newSpec returns a spec whose "binaries" are small files with distinct contents: the
// builder must carry them byte for byte, whatever they hold.
func newSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	binaries := map[string]string{}
	for _, platform := range []string{"linux/arm64", "linux/amd64"} {
		path := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-"))
		if err := os.WriteFile(path, []byte("binary for "+platform), 0o644); err != nil {
			t.Fatal(err)
		}
		binaries[platform] = path
	}
	return Spec{
		Binaries: binaries,
		CABundle: CABundle(),
		Version:  "v1.2.3",
		Revision: "0123abc",
		Source:   "https://github.com/open-cluster-management-io/argocd-pull-addon",
		Created:  time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
	}
}

func TestBuild(t *testing.T) {
	spec := newSpec(t)
	index, err := Build(spec)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	images := platformImages(t, index)
	if len(images) != 2 {
		t.Fatalf("index holds %d images, want linux/amd64 and linux/arm64", len(images))
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":      spec.Source,
		"org.opencontainers.image.revision":    "0123abc",
		"org.opencontainers.image.version":     "v1.2.3",
		"org.opencontainers.image.title":       "argocd-pull-addon",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.description": "Argo CD pull model for Open Cluster Management: hub manager and managed-cluster agent",
	}
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		image, ok := images[platform]
		if !ok {
			t.Errorf("no %s image in the index", platform)
			continue
		}
		expectConfig(t, image, platform, wantLabels)
		config, err := image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !config.Created.Equal(spec.Created) {
			t.Errorf("%s: created %s, want %s", platform, config.Created, spec.Created)
		}
		files := imageFiles(t, image)
		if binary := expectFilesystem(t, platform, files); string(binary) != "binary for "+platform {
			t.Errorf("%s: the image's binary is %q, want the %s binary", platform, binary, platform)
		}
		if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"].content, spec.CABundle) {
			t.Errorf("%s: the CA bundle differs from the spec's", platform)
		}
		for path, f := range files {
			if !f.header.ModTime.Equal(spec.Created) {
				t.Errorf("%s: /%s dated %s, want %s", platform, path, f.header.ModTime, spec.Created)
			}
		}
	}
}

// Same inputs, same digest: the image of a commit can be rebuilt and compared.
func TestBuildIsReproducible(t *testing.T) {
	spec := newSpec(t)
	digest := func(spec Spec) string {
		t.Helper()
		index, err := Build(spec)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		d, err := index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first := digest(spec)
	if again := digest(spec); again != first {
		t.Errorf("two builds of the same spec: %s and %s", first, again)
	}
	later := spec
	later.Created = spec.Created.Add(time.Second)
	if other := digest(later); other == first {
		t.Errorf("a build at another time has the same digest %s: the time is not in the image", other)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := map[string]struct {
		change  func(*Spec)
		wantErr string
	}{
		"complete": {change: func(*Spec) {}},
		"no binary": {
			change:  func(s *Spec) { s.Binaries = map[string]string{} },
			wantErr: "no binary given",
		},
		"missing binary file": {
			change:  func(s *Spec) { s.Binaries["linux/amd64"] = "/nonexistent/argocd-pull-addon" },
			wantErr: "binary for linux/amd64",
		},
		"binary is a directory": {
			change:  func(s *Spec) { s.Binaries["linux/amd64"] = os.TempDir() },
			wantErr: "is not a regular file",
		},
		"not linux": {
			change:  func(s *Spec) { s.Binaries["darwin/arm64"] = s.Binaries["linux/arm64"] },
			wantErr: `platform "darwin/arm64" is not linux/<arch>`,
		},
		"no CA bundle": {
			change:  func(s *Spec) { s.CABundle = nil },
			wantErr: "empty CA bundle",
		},
		"no version": {
			change:  func(s *Spec) { s.Version = "" },
			wantErr: "empty version",
		},
		"no revision": {
			change:  func(s *Spec) { s.Revision = "" },
			wantErr: "empty revision",
		},
		"no source": {
			change:  func(s *Spec) { s.Source = "" },
			wantErr: "empty source",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			spec := newSpec(t)
			tt.change(&spec)
			err := spec.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCABundle(t *testing.T) {
	pemBundle := CABundle()
	if n := countCertificates(t, pemBundle); n < 100 {
		t.Errorf("CABundle holds %d certificates, want the NSS roots (over 100)", n)
	}
	// Roots NSS distrusts after a date cannot be expressed in PEM and are left out.
	unconstrained, constrained := 0, 0
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			unconstrained++
		} else {
			constrained++
		}
	}
	if n := countCertificates(t, pemBundle); n != unconstrained {
		t.Errorf("CABundle holds %d certificates, want the %d unconstrained roots (of %d)", n, unconstrained, unconstrained+constrained)
	}
	if diff := cmp.Diff(string(pemBundle), string(CABundle())); diff != "" {
		t.Errorf("CABundle differs between calls:\n%s", diff)
	}
}
