package chart_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// unknownValue is a key no part of the chart reads.
const unknownValue = "notAValueOfThisChart"

// closedObject is an object of the values schema that refuses keys it does not list
// (additionalProperties: false), and one place in the values where it applies.
type closedObject struct {
	// node is where the schema declares it (JSON pointer into values.schema.json).
	node string
	// at is the way to it through the values: property names, and "[]" for an item of a list.
	at []string
	// required are its required properties.
	required []string
}

// Every object the values schema closes refuses a key it does not list, at a place in the
// values where users would write it: a typo anywhere the schema claims to catch one is
// caught, not silently ignored by the templates.
func TestSchemaRefusesUnknownKeysWhereverItIsClosed(t *testing.T) {
	chrt, err := framework.LoadChart()
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(chrt.Schema, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	closed := map[string]closedObject{}
	collectClosedObjects(schema, schema, "", nil, closed)
	// Every closed node the schema declares is reached from the values' root.
	declared := map[string]bool{}
	declareClosedNodes(schema, "", declared)
	for node := range declared {
		if _, ok := closed[node]; !ok {
			t.Errorf("schema node %s is closed but no value path reaches it: the test cannot check it", node)
		}
	}
	if len(closed) < 10 {
		t.Fatalf("found only %d closed objects in the values schema: the walk is broken", len(closed))
	}
	for node, c := range closed {
		name := strings.Join(c.at, ".")
		if name == "" {
			name = "the values' root"
		}
		t.Run(name, func(t *testing.T) {
			valid := valuesWith(t, chrt.Values, c, false)
			if err := chartutil.ValidateAgainstSchema(chrt, valid); err != nil {
				t.Fatalf("the values without the unknown key are refused already (%s): %v", node, err)
			}
			invalid := valuesWith(t, chrt.Values, c, true)
			err := chartutil.ValidateAgainstSchema(chrt, invalid)
			if err == nil || !strings.Contains(err.Error(), unknownValue) {
				t.Fatalf("%s accepts %q at %s: err %v", node, unknownValue, strings.Join(c.at, "."), err)
			}
		})
	}
}

// collectClosedObjects walks the schema from node along the ways values reach it
// (properties, items, $ref, allOf/anyOf/oneOf) and records each closed object the first
// time a path reaches it.
func collectClosedObjects(root, node map[string]any, pointer string, at []string, out map[string]closedObject) {
	if ref, ok := node["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/definitions/")
		definitions, _ := root["definitions"].(map[string]any)
		target, _ := definitions[name].(map[string]any)
		if found && target != nil {
			collectClosedObjects(root, target, "/definitions/"+name, at, out)
		}
		return
	}
	if node["additionalProperties"] == false {
		if _, seen := out[pointer]; !seen {
			var required []string
			for _, r := range asSlice(node["required"]) {
				required = append(required, fmt.Sprint(r))
			}
			out[pointer] = closedObject{node: pointer, at: append([]string(nil), at...), required: required}
		}
	}
	if properties, ok := node["properties"].(map[string]any); ok {
		for name, p := range properties {
			if child, ok := p.(map[string]any); ok {
				collectClosedObjects(root, child, pointer+"/properties/"+name, append(append([]string(nil), at...), name), out)
			}
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		collectClosedObjects(root, items, pointer+"/items", append(append([]string(nil), at...), "[]"), out)
	}
	for _, combinator := range []string{"allOf", "anyOf", "oneOf"} {
		for i, alternative := range asSlice(node[combinator]) {
			if child, ok := alternative.(map[string]any); ok {
				collectClosedObjects(root, child, fmt.Sprintf("%s/%s/%d", pointer, combinator, i), at, out)
			}
		}
	}
}

// declareClosedNodes lists every closed object anywhere in the schema by its pointer.
func declareClosedNodes(node any, pointer string, out map[string]bool) {
	switch n := node.(type) {
	case map[string]any:
		if n["additionalProperties"] == false {
			out[pointer] = true
		}
		for k, v := range n {
			declareClosedNodes(v, pointer+"/"+k, out)
		}
	case []any:
		for i, v := range n {
			declareClosedNodes(v, fmt.Sprintf("%s/%d", pointer, i), out)
		}
	}
}

// valuesWith is the chart's defaults with the object at c.at present (its defaults, its
// required properties set to "x" where it has none) and, when unknown, a key it does not list.
func valuesWith(t *testing.T, defaults map[string]any, c closedObject, unknown bool) map[string]any {
	t.Helper()
	raw, err := json.Marshal(defaults)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := json.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	if len(c.at) == 0 {
		if unknown {
			values[unknownValue] = true
		}
		return values
	}
	parent := values
	for i, step := range c.at {
		last := i == len(c.at)-1
		next := c.at[min(i+1, len(c.at)-1)]
		if step == "[]" {
			t.Fatalf("%s: a list at the root of the values", c.node)
		}
		if next == "[]" && !last {
			// A list of these objects: one item, the object itself.
			item := objectAt(nil, c, unknown)
			parent[step] = []any{item}
			if i+1 != len(c.at)-1 {
				t.Fatalf("%s: objects nested in list items below %s are not built by this test", c.node, step)
			}
			return values
		}
		if last {
			parent[step] = objectAt(parent[step], c, unknown)
			return values
		}
		child, _ := parent[step].(map[string]any)
		if child == nil {
			child = map[string]any{}
			parent[step] = child
		}
		parent = child
	}
	return values
}

// objectAt is current (when an object) with c's required properties and the unknown key.
func objectAt(current any, c closedObject, unknown bool) map[string]any {
	obj, _ := current.(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	for _, r := range c.required {
		if _, ok := obj[r]; !ok {
			obj[r] = "x"
		}
	}
	if unknown {
		obj[unknownValue] = true
	}
	return obj
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
