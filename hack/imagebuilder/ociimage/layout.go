package ociimage

import (
	"context"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// WriteLayout replaces dir with an OCI image layout whose index.json names one manifest:
// index, annotated with refName. crane, skopeo (oci:DIR:refName) and oras
// (--from-oci-layout DIR:refName) push it as the multi-platform image.
func WriteLayout(dir string, index v1.ImageIndex, refName string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout %s: %w", dir, err)
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	if err := path.AppendIndex(index, layout.WithAnnotations(map[string]string{RefNameAnnotation: refName})); err != nil {
		return fmt.Errorf("writing the image index into %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the one image index a layout written by WriteLayout holds.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the layout %s: %w", dir, err)
	}
	manifest, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	if len(manifest.Manifests) != 1 || !manifest.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s/index.json holds %d manifests; want the one image index `make image` writes", dir, len(manifest.Manifests))
	}
	index, err := root.ImageIndex(manifest.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the image index of %s: %w", dir, err)
	}
	return index, nil
}

// Push writes the layout's image index, every platform's image with it, to the registry
// reference ref (registry/repository:tag), authenticated from keychain (the Docker config
// file's credentials and helpers for authn.DefaultKeychain). It returns the index's digest.
func Push(ctx context.Context, dir, ref string, keychain authn.Keychain, options ...remote.Option) (v1.Hash, error) {
	tag, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	index, err := ReadLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	options = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)}, options...)
	if err := remote.WriteIndex(tag, index, options...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s to %s: %w", dir, tag, err)
	}
	return index.Digest()
}
