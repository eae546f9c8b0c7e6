// Package docs_test checks the user documentation against the code it describes.
package docs_test

import (
	"go/ast"
	"go/constant"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// userVisibleConst names the constants whose values users see: Event reasons and
// condition types and reasons (Reason*, EventReason*, Condition*).
var userVisibleConst = regexp.MustCompile(`^(Event)?Reason[A-Z]|^Condition[A-Z]`)

// eventReasonArg is the position of the reason argument of each EventRecorder method.
var eventReasonArg = map[string]int{"Event": 2, "Eventf": 2, "AnnotatedEventf": 3}

// conditionTypes are the condition structs whose Type and Reason fields users see.
var conditionTypes = map[string]bool{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Condition":                                    true,
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1.ApplicationCondition": true,
}

// emitted is one string users see, with where the code says it.
type emitted struct {
	value, where string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// collectEmitted type-checks every package under pkg/ and returns the strings its code
// shows users as Event sources and reasons and condition types and reasons: the values of
// the user-visible constants, and any constant (a literal included) naming an Event
// recorder (GetEventRecorderFor), passed as an Event's reason or set as a condition's
// Type or Reason.
func collectEmitted(t *testing.T, root string) []emitted {
	t.Helper()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
		Dir:  root,
	}
	pkgs, err := packages.Load(cfg, "./pkg/...")
	if err != nil {
		t.Fatalf("loading ./pkg/...: %v", err)
	}
	var out []emitted
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			t.Errorf("package %s: %v", pkg.PkgPath, e)
		}
		if pkg.Types == nil || pkg.TypesInfo == nil {
			continue
		}
		scope := pkg.Types.Scope()
		for _, name := range scope.Names() {
			c, ok := scope.Lookup(name).(*types.Const)
			if !ok || !userVisibleConst.MatchString(name) || c.Val().Kind() != constant.String {
				continue
			}
			out = append(out, emitted{constant.StringVal(c.Val()), pkg.PkgPath + "." + name})
		}
		constantString := func(expr ast.Expr) (string, bool) {
			tv, ok := pkg.TypesInfo.Types[expr]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
				return "", false
			}
			return constant.StringVal(tv.Value), true
		}
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if sel.Sel.Name == "GetEventRecorderFor" && len(n.Args) == 1 {
						if v, ok := constantString(n.Args[0]); ok {
							out = append(out, emitted{v, pkg.Fset.Position(n.Pos()).String()})
						}
						return true
					}
					arg, isEventMethod := eventReasonArg[sel.Sel.Name]
					recv := pkg.TypesInfo.TypeOf(sel.X)
					if !isEventMethod || recv == nil || !strings.HasSuffix(recv.String(), "record.EventRecorder") || len(n.Args) <= arg {
						return true
					}
					if v, ok := constantString(n.Args[arg]); ok {
						out = append(out, emitted{v, pkg.Fset.Position(n.Pos()).String()})
					}
				case *ast.CompositeLit:
					typ := pkg.TypesInfo.TypeOf(n)
					if typ == nil || !conditionTypes[typ.String()] {
						return true
					}
					for _, elt := range n.Elts {
						kv, ok := elt.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						if key, ok := kv.Key.(*ast.Ident); ok && (key.Name == "Type" || key.Name == "Reason") {
							if v, ok := constantString(kv.Value); ok {
								out = append(out, emitted{v, pkg.Fset.Position(kv.Pos()).String()})
							}
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// documentedNames are the names docs/reference/events-and-conditions.md lists: every
// `code span` of a table row's first cell.
func documentedNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "reference", "events-and-conditions.md"))
	if err != nil {
		t.Fatalf("reading docs/reference/events-and-conditions.md: %v", err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	names := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			names[m[1]] = true
		}
	}
	return names
}

// TestReferenceListsEveryReasonAndCondition fails when the code can show users an Event
// source or reason or a condition type or reason that docs/reference/events-and-conditions.md does
// not explain.
func TestReferenceListsEveryReasonAndCondition(t *testing.T) {
	root := repoRoot(t)
	documented := documentedNames(t, root)
	found := collectEmitted(t, root)
	if len(found) < 40 {
		t.Fatalf("found only %d reasons and condition types in pkg/: the collection is broken", len(found))
	}
	missing := map[string][]string{}
	for _, e := range found {
		if !documented[e.value] {
			missing[e.value] = append(missing[e.value], e.where)
		}
	}
	values := make([]string, 0, len(missing))
	for v := range missing {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		t.Errorf("%q (%s) is not in docs/reference/events-and-conditions.md: add a row saying what it means and what to do", v, strings.Join(missing[v], ", "))
	}
}
