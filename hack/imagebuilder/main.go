// Command imagebuilder builds the argocd-pull-addon image without a container engine and
// pushes it (`make image`, `make push IMG=...`; see the Makefile):
//
//	imagebuilder build --out bin/image --binary linux/amd64=PATH --binary linux/arm64=PATH \
//	    --version v0.1.0 --revision abc1234 --source https://github.com/... --created 1700000000
//	imagebuilder push --layout bin/image --image registry.example.com/argocd-pull-addon:v0.1.0
//
// build writes an OCI image layout holding one multi-platform image index; push sends it
// to a registry with the credentials of the Docker config file (~/.docker/config.json,
// $DOCKER_CONFIG; `docker login`, `crane auth login` or `oras login` write it).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/open-cluster-management-io/argocd-pull-addon/hack/imagebuilder/ociimage"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagebuilder build|push [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuilder:", err)
		os.Exit(1)
	}
}

// binaryFlags collects repeated --binary os/arch=path flags.
type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(value string) error {
	platform, path, ok := strings.Cut(value, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q is not os/arch=path", value)
	}
	if _, _, err := ociimage.SplitPlatform(platform); err != nil {
		return err
	}
	b[platform] = path
	return nil
}

func build(args []string) error {
	binaries := binaryFlags{}
	spec := ociimage.Spec{Binaries: binaries}
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	out := fs.String("out", "bin/image", "directory of the OCI image layout to write (replaced)")
	fs.Var(binaries, "binary", "os/arch=path of a static binary; repeat for each platform")
	fs.StringVar(&spec.Version, "version", "", "the binary's version: label "+ociimage.LabelVersion+" and the layout's ref name")
	fs.StringVar(&spec.Revision, "revision", "", "the commit built: label "+ociimage.LabelRevision)
	fs.StringVar(&spec.Source, "source", "", "the repository URL: label "+ociimage.LabelSource)
	created := fs.Int64("created", 0, "creation time of the images and their files, Unix seconds (SOURCE_DATE_EPOCH)")
	_ = fs.Parse(args)
	spec.Created = time.Unix(*created, 0).UTC()
	spec.CABundle = ociimage.CABundle()

	index, err := ociimage.Build(spec)
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(*out, index, spec.Version); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: image index %s for %s\n", *out, digest, strings.Join(spec.Platforms(), ", "))
	return nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("layout", "bin/image", "the OCI image layout `imagebuilder build` wrote")
	image := fs.String("image", "", "where to push: registry/repository:tag")
	_ = fs.Parse(args)
	if *image == "" {
		return fmt.Errorf("--image is required (make push IMG=registry/repository:tag)")
	}
	digest, err := ociimage.Push(ctx, *dir, *image, authn.DefaultKeychain)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s: %s@%s\n", *dir, *image, digest)
	return nil
}
