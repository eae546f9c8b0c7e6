package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ExampleFile is one file of examples/: its path below examples/ ("pull/02-placement.yaml")
// and its objects, in the file's order.
type ExampleFile struct {
	Path    string
	Objects []*unstructured.Unstructured
}

// ExamplesDir is examples/ at the repository root.
func ExamplesDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "examples"), nil
}

// ExampleStories are the directories of examples/, in name order.
func ExampleStories() ([]string, error) {
	dir, err := ExamplesDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ReadExamples reads the manifests of examples/story in the order `kubectl apply -f
// examples/story/` applies them: the .yaml, .yml and .json files of the directory itself,
// by name (os.ReadDir sorts as kubectl's directory walk does).
func ReadExamples(story string) ([]ExampleFile, error) {
	dir, err := ExamplesDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(dir, story))
	if err != nil {
		return nil, err
	}
	var out []ExampleFile
	for _, e := range entries {
		if e.IsDir() || !IsManifestFile(e.Name()) {
			continue
		}
		f, err := readExampleFile(dir, filepath.Join(story, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// IsManifestFile says whether kubectl apply -f reads a file of this name from a directory.
func IsManifestFile(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// ReadExample reads examples/path, which must hold exactly one object.
func ReadExample(path string) (*unstructured.Unstructured, error) {
	dir, err := ExamplesDir()
	if err != nil {
		return nil, err
	}
	f, err := readExampleFile(dir, path)
	if err != nil {
		return nil, err
	}
	if len(f.Objects) != 1 {
		return nil, fmt.Errorf("examples/%s holds %d objects, not one", path, len(f.Objects))
	}
	return f.Objects[0], nil
}

// readExampleFile decodes every document of examples/path (dir is examples/), skipping
// the empty ones (comments only) as kubectl does.
func readExampleFile(dir, path string) (ExampleFile, error) {
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return ExampleFile{}, err
	}
	f := ExampleFile{Path: filepath.ToSlash(path)}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		err := decoder.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ExampleFile{}, fmt.Errorf("examples/%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || strings.TrimSpace(u.GetName()) == "" {
			return ExampleFile{}, fmt.Errorf("examples/%s: a document without apiVersion, kind or name", path)
		}
		f.Objects = append(f.Objects, u)
	}
	return f, nil
}
