package pullmodel

import (
	"reflect"
	"testing"
)

// TestFeedbackRulesMatchTheParser: every value the rules ask the work agent for is one
// the parser reads, one rule per scalar. (propagation's TestBuiltWorkFeedbackIsReadBack
// feeds a built ManifestWork's own rules through the parser end to end.)
func TestFeedbackRulesMatchTheParser(t *testing.T) {
	rules := FeedbackRules()
	names := map[string]bool{}
	for _, rule := range rules {
		for _, p := range rule.JsonPaths {
			if !knownFeedback(p.Name) {
				t.Errorf("rule %q (%s) is not read by ScalarsFromFeedback", p.Name, p.Path)
			}
			names[p.Name] = true
		}
	}
	if want := reflect.TypeFor[Scalars]().NumField(); len(names) != want {
		t.Errorf("%d distinct feedback rules for %d scalars", len(names), want)
	}
	// The rules are a copy: a caller changing them does not change the contract.
	rules[0].JsonPaths[0].Name = "changed"
	if FeedbackRules()[0].JsonPaths[0].Name == "changed" {
		t.Error("FeedbackRules hands out the package's own slice")
	}
}
