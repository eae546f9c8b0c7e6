package chart_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// apiVersionsFile records, per chart version, the hash of its API: its CRDs and RBAC.
// One line per released version, never edited afterwards: a change of CRDs or RBAC needs
// a new chart version, a new line and a CHANGELOG.md entry.
const apiVersionsFile = "testdata/api-versions.txt"

// previousChart is the last released chart, packaged (test/integration/chartlifecycle
// upgrades from it).
const previousChart = "../integration/chartlifecycle/testdata/argocd-pull-integration-0.1.0.tgz"

// apiHash is the sha256 of what a user's hub takes from chrt beyond the manager: its CRDs
// (under crds/ or rendered by templates) and its RBAC (Roles, ClusterRoles and their
// bindings, hooks included), rendered with the default values, each object without its
// labels and annotations (which carry the chart version itself), in a stable order.
func apiHash(t *testing.T, chrt *chart.Chart) string {
	t.Helper()
	files, err := framework.RenderFiles(chrt, framework.ChartNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range chrt.CRDObjects() {
		files[crd.Filename] = string(crd.File.Data)
	}
	objs, err := framework.DecodeRendered(files)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		o = o.DeepCopy()
		unstructured.RemoveNestedField(o.Object, "metadata", "labels")
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
		b, err := json.Marshal(o.Object) // map keys sorted: a stable encoding
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if len(docs) == 0 {
		t.Fatal("no CRDs or RBAC found")
	}
	sort.Strings(docs)
	sum := sha256.Sum256([]byte(strings.Join(docs, "\n")))
	return hex.EncodeToString(sum[:])
}

// recordedVersions reads apiVersionsFile: version -> hash, and the versions in order.
func recordedVersions(t *testing.T) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(apiVersionsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	hashes := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("%s: %q is not \"<version> <sha256>\"", apiVersionsFile, line)
		}
		if _, dup := hashes[fields[0]]; dup {
			t.Fatalf("%s: version %s recorded twice", apiVersionsFile, fields[0])
		}
		hashes[fields[0]] = fields[1]
		order = append(order, fields[0])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return hashes, order
}

func TestChartVersionChangesWithItsCRDsAndRBAC(t *testing.T) {
	chrt := loadChart(t)
	version := chrt.Metadata.Version
	got := apiHash(t, chrt)
	hashes, order := recordedVersions(t)

	recorded, ok := hashes[version]
	switch {
	case !ok:
		t.Fatalf("chart version %s is not in %s: add the line\n%s %s\nand a CHANGELOG.md entry", version, apiVersionsFile, version, got)
	case recorded != got:
		t.Fatalf("the chart's CRDs or RBAC changed since version %s was recorded: bump version in Chart.yaml, "+
			"add the line\n<new version> %s\nto %s and a CHANGELOG.md entry (never edit a released line)", version, got, apiVersionsFile)
	case order[len(order)-1] != version:
		t.Fatalf("chart version %s is not the newest line of %s (%s is)", version, apiVersionsFile, order[len(order)-1])
	}

	changelog, err := os.ReadFile(filepath.Join(chartDir(t), "..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "## "+version) {
		t.Errorf("CHANGELOG.md has no section \"## %s\"", version)
	}
}

// The recorded hash of the previous version is that of its package: the hash sees CRDs
// under crds/ as well as templates, and differs where the API did change.
func TestThePreviousVersionsHashIsItsPackages(t *testing.T) {
	prev, err := loader.Load(previousChart)
	if err != nil {
		t.Fatal(err)
	}
	hashes, _ := recordedVersions(t)
	got := apiHash(t, prev)
	if hashes[prev.Metadata.Version] != got {
		t.Fatalf("%s records %s for %s, its package %s hashes to %s", apiVersionsFile,
			hashes[prev.Metadata.Version], prev.Metadata.Version, previousChart, got)
	}
	if cur := apiHash(t, loadChart(t)); cur == got {
		t.Fatalf("the current chart's CRDs and RBAC hash like %s's, yet they changed", prev.Metadata.Version)
	}
}
