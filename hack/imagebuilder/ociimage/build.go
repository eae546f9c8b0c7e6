package ociimage

import (
	"bytes"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Build returns the OCI image index of spec: one image per platform, each a single layer
// (rootFS) on an empty base.
func Build(spec Spec) (v1.ImageIndex, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("image spec: %w", err)
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, platform := range spec.Platforms() {
		image, err := buildImage(spec, platform)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", platform, err)
		}
		goos, goarch, _ := SplitPlatform(platform)
		adds = append(adds, mutate.IndexAddendum{
			Add:        image,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
	}
	return mutate.AppendManifests(index, adds...), nil
}

func buildImage(spec Spec, platform string) (v1.Image, error) {
	goos, goarch, _ := SplitPlatform(platform)
	layerBytes, err := rootFSLayer(rootFS(spec.Binaries[platform], spec.CABundle), spec.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	image, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "hack/imagebuilder", Comment: "argocd-pull-addon " + spec.Version},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	configFile, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	configFile = configFile.DeepCopy()
	configFile.OS = goos
	configFile.Architecture = goarch
	configFile.Created = v1.Time{Time: spec.Created}
	configFile.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/",
		Labels:     spec.Labels(),
	}
	return mutate.ConfigFile(image, configFile)
}
