//go:build builtimage

package ociimage

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// The image `make image` built, as a user gets it: `make test-image` builds it and runs
// this test with IMAGE_LAYOUT (the layout directory), IMAGE_VERSION and IMAGE_REVISION
// (what the Makefile stamped). It unpacks each platform's image, checks its config and
// files, and runs the binary of this machine's platform as the image's user.
func TestBuiltImage(t *testing.T) {
	dir, version, revision := os.Getenv("IMAGE_LAYOUT"), os.Getenv("IMAGE_VERSION"), os.Getenv("IMAGE_REVISION")
	if dir == "" || version == "" || revision == "" {
		t.Fatal("IMAGE_LAYOUT, IMAGE_VERSION and IMAGE_REVISION must be set; run `make test-image`")
	}
	index, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	images := platformImages(t, index)
	wantMachine := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	if len(images) != len(wantMachine) {
		t.Errorf("the index holds %d images, want linux/amd64 and linux/arm64", len(images))
	}
	var labels map[string]string
	for platform, machine := range wantMachine {
		image, ok := images[platform]
		if !ok {
			t.Errorf("no %s image in the index", platform)
			continue
		}
		config, err := image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		labels = config.Config.Labels
		expectConfig(t, image, platform, map[string]string{
			LabelSource:      "https://github.com/open-cluster-management-io/argocd-pull-addon",
			LabelRevision:    revision,
			LabelVersion:     version,
			LabelTitle:       "argocd-pull-addon",
			LabelLicenses:    "Apache-2.0",
			LabelDescription: "Argo CD pull model for Open Cluster Management: hub manager and managed-cluster agent",
		})
		binary := expectFilesystem(t, platform, imageFiles(t, image))
		path := filepath.Join(t.TempDir(), strings.ReplaceAll(platform, "/", "-"))
		if err := os.WriteFile(path, binary, 0o755); err != nil {
			t.Fatal(err)
		}
		expectStaticELF(t, platform, path, machine)
		if platform == runtime.GOOS+"/"+runtime.GOARCH {
			expectVersion(t, path, "argocd-pull-addon "+labels[LabelVersion]+" (commit "+labels[LabelRevision]+", ")
		}
	}
	if _, ok := images[runtime.GOOS+"/"+runtime.GOARCH]; !ok {
		t.Errorf("no image for this machine (%s/%s): no binary was run", runtime.GOOS, runtime.GOARCH)
	}
}

// expectStaticELF checks the binary is for the platform's machine and has no program
// interpreter: CGO_ENABLED=0 worked, and it starts on an image without libc.
func expectStaticELF(t *testing.T, platform, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: the binary is not ELF: %v", platform, err)
		return
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: the binary is for %s, want %s", platform, f.Machine, machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: the binary is dynamically linked (has a program interpreter)", platform)
		}
	}
}

// expectVersion runs `<binary> version` as the image's user (65532, when this test may
// switch users) and checks it reports the image's version and revision labels.
func expectVersion(t *testing.T, path, wantPrefix string) {
	t.Helper()
	cmd := exec.Command(path, "version")
	if os.Geteuid() == 0 {
		// t.TempDir's directories are private to root; the image's user must reach the binary.
		for dir := filepath.Dir(path); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: GID}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", path, err, out)
	}
	if !strings.HasPrefix(string(out), wantPrefix) {
		t.Errorf("%s version printed %q, want it to start with %q", path, out, wantPrefix)
	}
	t.Logf("the image's binary reports: %s", strings.TrimSpace(string(out)))
}
