package cmp

import (
	"os"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// healthScript is the health check the chart ships for Argo CD's argocd-cm.
const healthScript = "../../../charts/argocd-pull-integration/files/manifestwork-health.lua"

// runHealthCheck runs the script as Argo CD v3 does (util/lua/lua.go runLua and
// ExecuteHealthLua): only the package, base and table libraries, the object as the global
// `obj` converted like decodeValue, the returned table read for status and message.
func runHealthCheck(t *testing.T, work string) (status, message string) {
	t.Helper()
	script, err := os.ReadFile(healthScript)
	if err != nil {
		t.Fatal(err)
	}
	jsonWork, err := yaml.YAMLToJSON([]byte(work))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(jsonWork, &obj); err != nil {
		t.Fatal(err)
	}

	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(string(script)); err != nil {
		t.Fatalf("running the health check: %v", err)
	}
	result, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returned %s, want a table", l.Get(-1).Type())
	}
	return lua.LVAsString(result.RawGetString("status")), lua.LVAsString(result.RawGetString("message"))
}

// toLua is Argo CD's decodeValue: numbers become Lua numbers, maps and slices tables.
func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(toLua(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), toLua(l, item))
		}
		return tbl
	}
	return lua.LNil
}

const workHeader = `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: guestbook, namespace: cluster1, generation: 2}
`

func TestManifestWorkHealth(t *testing.T) {
	tests := map[string]struct {
		status      string
		wantStatus  string
		wantMessage string // a substring
	}{
		"no status yet: Progressing": {
			status:      ``,
			wantStatus:  "Progressing",
			wantMessage: "Waiting for the work agent to apply",
		},
		"applied, Available Unknown: Progressing": {
			status: `
status:
  conditions:
  - {type: Applied, status: "True", observedGeneration: 2, message: Apply manifest work complete}
  - {type: Available, status: Unknown, observedGeneration: 2}`,
			wantStatus:  "Progressing",
			wantMessage: "Waiting for the manifests to become available",
		},
		"conditions of an older generation: Progressing": {
			status: `
status:
  conditions:
  - {type: Applied, status: "True", observedGeneration: 1}
  - {type: Available, status: "True", observedGeneration: 1}`,
			wantStatus:  "Progressing",
			wantMessage: "Waiting for the work agent to apply",
		},
		"applied and available: Healthy": {
			status: `
status:
  conditions:
  - {type: Applied, status: "True", observedGeneration: 2}
  - {type: Available, status: "True", observedGeneration: 2, message: All resources are available}
  resourceStatus:
    manifests:
    - resourceMeta: {kind: Deployment, name: ui, namespace: guestbook}
      statusFeedback:
        values:
        - {name: Replicas, fieldValue: {type: Integer, integer: 2}}
        - {name: AvailableReplicas, fieldValue: {type: Integer, integer: 2}}`,
			wantStatus:  "Healthy",
			wantMessage: "All resources are available",
		},
		"a Deployment still rolling out: Progressing": {
			status: `
status:
  conditions:
  - {type: Applied, status: "True", observedGeneration: 2}
  - {type: Available, status: "True", observedGeneration: 2}
  resourceStatus:
    manifests:
    - resourceMeta: {kind: Deployment, name: ui, namespace: guestbook}
      statusFeedback:
        values:
        - {name: Replicas, fieldValue: {type: Integer, integer: 3}}
        - {name: AvailableReplicas, fieldValue: {type: Integer, integer: 1}}`,
			wantStatus:  "Progressing",
			wantMessage: "Deployment guestbook/ui: 1/3 replicas available",
		},
		"Applied False: Degraded with the manifest's error": {
			status: `
status:
  conditions:
  - {type: Applied, status: "False", observedGeneration: 2, message: Failed to apply manifest work}
  resourceStatus:
    manifests:
    - resourceMeta: {kind: Deployment, name: ui, namespace: missing}
      conditions:
      - {type: Applied, status: "False", message: "Failed to apply manifest: namespaces \"missing\" not found"}`,
			wantStatus:  "Degraded",
			wantMessage: `Failed to apply manifest work: Deployment missing/ui: Failed to apply manifest: namespaces "missing" not found`,
		},
		"Available False: Degraded": {
			status: `
status:
  conditions:
  - {type: Applied, status: "True", observedGeneration: 2}
  - {type: Available, status: "False", observedGeneration: 2, message: "1 of 2 resources are not available"}`,
			wantStatus:  "Degraded",
			wantMessage: "1 of 2 resources are not available",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			status, message := runHealthCheck(t, workHeader+tt.status)
			if status != tt.wantStatus || !strings.Contains(message, tt.wantMessage) {
				t.Errorf("health = %s %q, want %s with %q", status, message, tt.wantStatus, tt.wantMessage)
			}
		})
	}
}
