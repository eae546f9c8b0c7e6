package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChartName is the hub chart, installed by `clusteradm install hub-addon --names argocd`
// as release ChartName in namespace ChartNamespace.
const (
	ChartName      = "argocd-pull-integration"
	ChartNamespace = "argocd"
)

// RenderChart renders charts/<ChartName> with the Helm engine, as `helm install` would for
// release ChartName in namespace, with values over the chart's defaults. It returns the
// objects of the templates in file order, without the CRDs (templates/crds): StartAPIServer
// installs them from the same files, and creating them again would fail; and without
// Helm hooks (helm.sh/hook), which `helm install` does not create either.
func RenderChart(namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := LoadChart()
	if err != nil {
		return nil, err
	}
	files, err := RenderFiles(chrt, namespace, values)
	if err != nil {
		return nil, err
	}
	all, err := DecodeRendered(files)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, u := range all {
		if _, hook := u.GetAnnotations()["helm.sh/hook"]; hook || u.GetKind() == "CustomResourceDefinition" {
			continue
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// LoadChart loads charts/<ChartName> from this checkout.
func LoadChart() (*chart.Chart, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	chrt, err := loader.Load(filepath.Join(root, "charts", ChartName))
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", ChartName, err)
	}
	return chrt, nil
}

// RenderFiles renders chrt with the Helm engine for release ChartName in namespace, as
// `helm install` would, with values over the chart's defaults (validated against its
// values.schema.json, as Helm does): every template file by name, NOTES.txt included.
func RenderFiles(chrt *chart.Chart, namespace string, values map[string]any) (map[string]string, error) {
	vals, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: ChartName, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("building the values of chart %s: %w", chrt.Name(), err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", chrt.Name(), err)
	}
	return files, nil
}

// DecodeRendered decodes the objects of the rendered .yaml files, sorted by file name
// and in order within a file, hooks and CRDs included.
func DecodeRendered(files map[string]string) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(files[name])), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decoding %s: %w", name, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// CreateObjects creates objs in order.
func CreateObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}
