package chart_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// everythingEnabled turns on every optional part of the chart.
func everythingEnabled() map[string]any {
	return map[string]any{
		"cmp":   map[string]any{"enabled": true},
		"addon": map[string]any{"defaultConfig": map[string]any{"create": true}},
		"manager": map[string]any{
			"podDisruptionBudget": map[string]any{"enabled": true},
			"priorityClassName":   "system-cluster-critical",
			"podAnnotations":      map[string]any{"example.com/a": "1"},
			"podLabels":           map[string]any{"team": "platform"},
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{
					"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}}}}}}},
		},
		"serviceAccount": map[string]any{"annotations": map[string]any{"example.com/role": "hub"}},
		"metrics": map[string]any{"service": map[string]any{"enabled": true}, "serviceMonitor": securedServiceMonitor(),
			"dashboard": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
			"reader":             map[string]any{"serviceAccount": map[string]any{"name": "prometheus", "namespace": "monitoring"}},
			"servingCertificate": map[string]any{"secretName": "argocd-pull-metrics-tls"}},
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	chrt, err := framework.LoadChart()
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

// render renders the chart with values: every object (hooks and CRDs included) and the
// rendered files by name.
func render(t *testing.T, values map[string]any) ([]*unstructured.Unstructured, map[string]string) {
	t.Helper()
	files, err := framework.RenderFiles(loadChart(t), framework.ChartNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeRendered(files)
	if err != nil {
		t.Fatal(err)
	}
	return objs, files
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, nameSuffix string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), nameSuffix) {
			return o
		}
	}
	t.Fatalf("no %s named *%s rendered", kind, nameSuffix)
	return nil
}

func TestEveryObjectCarriesHelmsStandardLabels(t *testing.T) {
	chrt := loadChart(t)
	want := map[string]string{
		"helm.sh/chart":                fmt.Sprintf("%s-%s", chrt.Name(), chrt.Metadata.Version),
		"app.kubernetes.io/name":       framework.ChartName,
		"app.kubernetes.io/instance":   framework.ChartName,
		"app.kubernetes.io/version":    chrt.Metadata.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
	}
	objs, _ := render(t, everythingEnabled())
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		labelSets := map[string]map[string]string{"metadata": o.GetLabels()}
		// The Pods of the Deployment and the hook Job too.
		if l, found, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels"); found {
			labelSets["pod template"] = l
		}
		for where, labels := range labelSets {
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("%s %s (%s): label %s=%q, want %q", o.GetKind(), o.GetName(), where, k, labels[k], v)
				}
			}
		}
	}
	// The check covered what it should.
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
		"Role", "RoleBinding", "PodDisruptionBudget", "Job", "ConfigMap", "ClusterManagementAddOn", "AddOnDeploymentConfig",
		"Service", "ServiceMonitor", "PrometheusRule"} {
		if !kinds[k] {
			t.Errorf("no %s rendered", k)
		}
	}
}

func TestGoMemLimitIsNinetyPercentOfTheMemoryLimit(t *testing.T) {
	for limit, want := range map[string]string{
		"":          "1382MiB", // the default limit, 1536Mi: 0.9 × 1536 MiB
		"1Gi":       "921MiB",
		"512Mi":     "460MiB",  // 460.8
		"1500M":     "1287MiB", // 1.35e9 bytes
		"2G":        "1716MiB",
		"1.5Gi":     "1382MiB",
		"100000000": "85MiB",
	} {
		t.Run("limit "+limit, func(t *testing.T) {
			var values map[string]any
			if limit != "" {
				values = map[string]any{"manager": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": limit}}}}
			}
			objs, _ := render(t, values)
			env, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "containers")
			got := ""
			for _, e := range env[0].(map[string]any)["env"].([]any) {
				if e.(map[string]any)["name"] == "GOMEMLIMIT" {
					got = fmt.Sprint(e.(map[string]any)["value"])
				}
			}
			if got != want {
				t.Fatalf("GOMEMLIMIT %q, want %q", got, want)
			}
		})
	}
	t.Run("no limit, no GOMEMLIMIT", func(t *testing.T) {
		objs, _ := render(t, map[string]any{"manager": map[string]any{"resources": nil}})
		c, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "containers")
		if env, ok := c[0].(map[string]any)["env"]; ok {
			t.Fatalf("env %v without a memory limit", env)
		}
	})
}

func TestPodSettingsReachTheManagerPod(t *testing.T) {
	objs, _ := render(t, everythingEnabled())
	d := find(t, objs, "Deployment", "-manager")
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if spec["priorityClassName"] != "system-cluster-critical" || spec["affinity"] == nil {
		t.Errorf("priorityClassName %v, affinity %v", spec["priorityClassName"], spec["affinity"])
	}
	labels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
	if labels["team"] != "platform" || annotations["example.com/a"] != "1" {
		t.Errorf("pod labels %v, annotations %v", labels, annotations)
	}
	sa := find(t, objs, "ServiceAccount", "-manager")
	if sa.GetAnnotations()["example.com/role"] != "hub" {
		t.Errorf("ServiceAccount annotations %v", sa.GetAnnotations())
	}
	pdb := find(t, objs, "PodDisruptionBudget", "-manager")
	selector, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
	podSelector, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if fmt.Sprint(selector) != fmt.Sprint(podSelector) {
		t.Errorf("PodDisruptionBudget selects %v, the Deployment's Pods are %v", selector, podSelector)
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(v) != "1" {
		t.Errorf("maxUnavailable %v, want 1 by default (never blocks a drain of the single replica)", v)
	}
}

func TestAnExistingServiceAccountIsNotCreated(t *testing.T) {
	objs, _ := render(t, map[string]any{"serviceAccount": map[string]any{"create": false, "name": "hub-sa"}})
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" && !strings.HasSuffix(o.GetName(), "-release-finalizers") {
			t.Errorf("ServiceAccount %s rendered with serviceAccount.create false", o.GetName())
		}
	}
	sa, _, _ := unstructured.NestedString(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "serviceAccountName")
	binding := find(t, objs, "ClusterRoleBinding", "-manager")
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if sa != "hub-sa" || subjects[0].(map[string]any)["name"] != "hub-sa" {
		t.Errorf("Deployment runs as %q, ClusterRoleBinding binds %v", sa, subjects)
	}
}

func TestCRDsFollowCrdsInstallAndKeep(t *testing.T) {
	objs, _ := render(t, nil)
	n := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			n++
			if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
				t.Errorf("CRD %s without helm.sh/resource-policy: keep by default", o.GetName())
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d CRDs rendered, want 4", n)
	}
	objs, _ = render(t, map[string]any{"crds": map[string]any{"keep": false}})
	if a := find(t, objs, "CustomResourceDefinition", "gitopsclusters.apps.open-cluster-management.io").GetAnnotations(); a["helm.sh/resource-policy"] != "" {
		t.Errorf("crds.keep false still keeps: %v", a)
	}
	objs, _ = render(t, map[string]any{"crds": map[string]any{"install": false}})
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("CRD %s rendered with crds.install false", o.GetName())
		}
	}
}

func TestNotesSayWhatToDoNext(t *testing.T) {
	_, files := render(t, nil)
	notes := files[framework.ChartName+"/templates/NOTES.txt"]
	for _, want := range []string{"rollout status deployment/" + framework.ChartName + "-manager",
		"clusteradm addon enable --names argocd-pull", "ApplicationSets, then GitOpsClusters, then this chart"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

func TestLoggingFormatReachesTheManager(t *testing.T) {
	for _, format := range []string{"", "json"} {
		values := map[string]any{}
		want := "--logging-format=text" // the default
		if format != "" {
			values["manager"] = map[string]any{"loggingFormat": format}
			want = "--logging-format=" + format
		}
		objs, _ := render(t, values)
		c, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment", "-manager").Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
		if !slices.Contains(args, want) {
			t.Errorf("loggingFormat %q: manager args %v lack %s", format, args, want)
		}
	}
}
