package ociimage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// buildLayout builds newSpec's index into a layout and returns the directory and the
// index's digest.
func buildLayout(t *testing.T) (string, v1.Hash) {
	t.Helper()
	index, err := Build(newSpec(t))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := WriteLayout(dir, index, "v1.2.3"); err != nil {
		t.Fatalf("WriteLayout: %v", err)
	}
	digest, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, digest
}

func TestWriteLayout(t *testing.T) {
	dir, digest := buildLayout(t)

	// index.json names the one multi-platform index, under the version as ref name.
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var root v1.IndexManifest
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(root.Manifests) != 1 || root.Manifests[0].Digest != digest ||
		root.Manifests[0].Annotations[RefNameAnnotation] != "v1.2.3" {
		t.Fatalf("index.json = %s, want one entry %s named v1.2.3", raw, digest)
	}

	index, err := ReadLayout(dir)
	if err != nil {
		t.Fatalf("ReadLayout: %v", err)
	}
	if got, _ := index.Digest(); got != digest {
		t.Errorf("ReadLayout returned index %s, want %s", got, digest)
	}
	if images := platformImages(t, index); len(images) != 2 {
		t.Errorf("the layout's index holds %d images, want 2", len(images))
	}

	// A second build replaces the layout rather than adding to it.
	index2, err := Build(newSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(dir, index2, "v1.2.3"); err != nil {
		t.Fatalf("rewriting the layout: %v", err)
	}
	if _, err := ReadLayout(dir); err != nil {
		t.Errorf("ReadLayout after a rebuild: %v", err)
	}
}

func TestReadLayoutRejectsOtherLayouts(t *testing.T) {
	if _, err := ReadLayout(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("ReadLayout of a missing directory succeeded")
	}
	dir, _ := buildLayout(t)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLayout(dir); err == nil || !strings.Contains(err.Error(), "holds 0 manifests") {
		t.Errorf("ReadLayout of an empty layout = %v, want an error saying it holds 0 manifests", err)
	}
}

// Push sends the layout to a registry (go-containerregistry's, in process, on 127.0.0.1)
// that demands basic auth, with the credentials of a Docker config file: what
// `make push IMG=...` does after `docker login`.
func TestPushWithDockerConfigCredentials(t *testing.T) {
	dir, digest := buildLayout(t)
	const user, password = "pusher", "s3cret"
	server := httptest.NewServer(requireBasicAuth(user, password, registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	defer server.Close()
	host := strings.TrimPrefix(server.URL, "http://")

	dockerConfig := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	config := `{"auths":{"` + host + `":{"auth":"` + auth + `"}}}`
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dockerConfig)

	ref := host + "/open-cluster-management/argocd-pull-addon:v1.2.3"
	pushed, err := Push(context.Background(), dir, ref, authn.DefaultKeychain)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if pushed != digest {
		t.Errorf("Push returned %s, want the layout's index %s", pushed, digest)
	}

	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(tag, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	if err != nil {
		t.Fatalf("pulling %s back: %v", ref, err)
	}
	if got, _ := pulled.Digest(); got != digest {
		t.Errorf("the registry's %s is %s, want %s", ref, got, digest)
	}
	for platform, image := range platformImages(t, pulled) {
		files := imageFiles(t, image)
		if got := string(files["usr/local/bin/argocd-pull-addon"].content); got != "binary for "+platform {
			t.Errorf("pulled %s image's binary is %q", platform, got)
		}
	}

	// Without credentials the registry refuses: the push above used the config file's.
	if _, err := Push(context.Background(), dir, ref, authn.NewMultiKeychain()); err == nil {
		t.Error("Push without credentials succeeded; the registry does not check them")
	}
}

func requireBasicAuth(user, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
