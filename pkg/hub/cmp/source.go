package cmp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tools the plugin runs when the source needs them. They are looked up on PATH, so the
// sidecar image decides whether Kustomize and Helm sources work.
const (
	kustomizeBinary = "kustomize"
	helmBinary      = "helm"
)

// kustomizationFiles are the names kustomize reads, as Argo CD's discovery knows them.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// SourceType is how a source directory is rendered.
type SourceType string

const (
	SourceDirectory SourceType = "Directory"
	SourceKustomize SourceType = "Kustomize"
	SourceHelm      SourceType = "Helm"
)

// DetectSourceType picks the renderer the way Argo CD's discovery does for the source
// path itself: a kustomization file makes it Kustomize (also next to a Chart.yaml),
// a Chart.yaml Helm, anything else a directory of plain manifests.
func DetectSourceType(dir string) (SourceType, error) {
	for _, name := range kustomizationFiles {
		if ok, err := isFile(filepath.Join(dir, name)); err != nil || ok {
			return SourceKustomize, err
		}
	}
	if ok, err := isFile(filepath.Join(dir, "Chart.yaml")); err != nil || ok {
		return SourceHelm, err
	}
	return SourceDirectory, nil
}

func isFile(path string) (bool, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	default:
		return info.Mode().IsRegular(), nil
	}
}

// Render returns the manifests of the source in dir, not yet normalized.
func Render(ctx context.Context, dir string, env Environment) ([]Manifest, error) {
	sourceType, err := DetectSourceType(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the source directory: %w", err)
	}
	var manifests []Manifest
	switch sourceType {
	case SourceKustomize:
		var out []byte
		if out, err = runTool(ctx, dir, "a kustomization file", kustomizeBinary, "build", "."); err == nil {
			manifests, err = decodeRendered("kustomize build", out)
		}
	case SourceHelm:
		var out []byte
		if err = valuesFilesInRepository(dir, env); err != nil {
			return nil, err
		}
		if out, err = runTool(ctx, dir, "Chart.yaml", helmBinary, helmTemplateArgs(env)...); err == nil {
			manifests, err = decodeRendered("helm template", out)
		}
	default:
		manifests, err = readDirectory(dir)
	}
	if err != nil {
		return nil, err
	}
	if len(manifests) == 0 {
		return nil, fmt.Errorf("no Kubernetes objects in the source path (%s): a ManifestWork needs at least one", sourceType)
	}
	return manifests, nil
}

// helmTemplateArgs renders the chart as Argo CD would name the release: after the
// Application. Dependencies are not fetched: vendor them into charts/.
func helmTemplateArgs(env Environment) []string {
	args := []string{"template", env.AppName, "."}
	if env.Namespace != "" {
		args = append(args, "--namespace", env.Namespace)
	}
	for _, f := range env.HelmValues {
		args = append(args, "--values", f)
	}
	return args
}

// runTool runs a renderer in dir and returns its stdout; a missing binary or a failure
// becomes an error naming the tool and carrying its stderr.
func runTool(ctx context.Context, dir, because, name string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("the source path has %s but %s is not installed in the plugin's sidecar (not on PATH): use an image that has %s, or render the manifests into plain YAML", because, name, name)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s %s failed: %s", name, strings.Join(args, " "), msg)
	}
	return stdout.Bytes(), nil
}

// readDirectory reads every .yaml, .yml and .json file under dir, recursively and in
// lexical order, like an Argo CD directory source with recurse: true. A symlink must stay
// inside dir; symlinked directories are not followed (filepath.WalkDir does not).
func readDirectory(dir string) ([]Manifest, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the source directory: %w", err)
	}
	var manifests []Manifest
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isManifestFile(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(path)
			if err != nil {
				return fmt.Errorf("%s is a broken symlink: %w", rel, err)
			}
			if !within(root, target) {
				return fmt.Errorf("%s is a symlink out of the source path: copy the file into the repository instead", rel)
			}
			if ok, err := isFile(target); err != nil || !ok {
				return err
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := decodeFile(filepath.ToSlash(rel), data)
		if err != nil {
			return err
		}
		manifests = append(manifests, found...)
		return nil
	})
	return manifests, err
}

func isManifestFile(name string) bool {
	switch filepath.Ext(name) { // case-sensitive, as Argo CD matches them
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// within says whether path is root or below it; both are absolute with symlinks resolved.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// repositoryRoot is the root of the repository checkout that dir, the source path,
// belongs to: dir minus env.SourcePath, or dir itself when Argo CD named no source path
// or dir does not end with it. Symlinks are resolved.
func repositoryRoot(dir string, env Environment) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("reading the source directory: %w", err)
	}
	source := filepath.Clean(filepath.FromSlash(env.SourcePath))
	if source == "." || filepath.IsAbs(source) || source == ".." || strings.HasPrefix(source, ".."+string(filepath.Separator)) {
		return root, nil
	}
	if trimmed, ok := strings.CutSuffix(root, string(filepath.Separator)+source); ok {
		return trimmed, nil
	}
	return root, nil
}

// valuesFilesInRepository checks that every HELM_VALUES file, symlinks resolved, is
// inside the repository, so an Application cannot make the repo-server's helm read its
// other files (another repository's checkout, service account tokens). A file that does
// not exist is left to helm, which names it; its path must still stay inside.
func valuesFilesInRepository(dir string, env Environment) error {
	if len(env.HelmValues) == 0 {
		return nil
	}
	root, err := repositoryRoot(dir, env)
	if err != nil {
		return err
	}
	source, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("reading the source directory: %w", err)
	}
	for _, f := range env.HelmValues {
		path := filepath.Join(source, f)
		resolved, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A missing file in a directory that resolves: the directory decides. A broken
			// symlink, or one through a directory that does not resolve, is refused: its
			// target may exist where helm runs.
			if _, lerr := os.Lstat(path); lerr == nil {
				return fmt.Errorf("plugin env HELM_VALUES (%s) entry %q leads out of the repository or nowhere: it is a broken symlink", EnvHelmValues, f)
			}
			var dir string
			if dir, err = filepath.EvalSymlinks(filepath.Dir(path)); err != nil {
				return fmt.Errorf("plugin env HELM_VALUES (%s) entry %q leads out of the repository or nowhere: its directory does not resolve: %w", EnvHelmValues, f, err)
			}
			resolved = filepath.Join(dir, filepath.Base(path))
		}
		if err != nil {
			return fmt.Errorf("plugin env HELM_VALUES (%s) entry %q: %w", EnvHelmValues, f, err)
		}
		if !within(root, resolved) {
			return fmt.Errorf("plugin env HELM_VALUES (%s) entry %q leads out of the repository (to %s): "+
				"values files must be inside the repository; copy the file into it", EnvHelmValues, f, resolved)
		}
	}
	return nil
}
