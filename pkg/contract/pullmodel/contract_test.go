package pullmodel

import (
	"reflect"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
)

// TestFeedbackRulesMatchTheParser: every value the rules ask the work agent for is one
// a parser reads, one rule per scalar and per delivered request id. (propagation's TestBuiltWorkFeedbackIsReadBack
// feeds a built ManifestWork's own rules through the parser end to end.)
func TestFeedbackRulesMatchTheParser(t *testing.T) {
	rules := FeedbackRules()
	names := map[string]bool{}
	for _, rule := range rules {
		for _, p := range rule.JsonPaths {
			scalar := scalarFeedback(p.Name)
			delivered := DeliveredFromFeedback([]workv1.FeedbackValue{str(p.Name, "x")}) != Delivered{}
			if scalar == delivered {
				t.Errorf("rule %q (%s) is read by %d parsers, want 1 of ScalarsFromFeedback and DeliveredFromFeedback", p.Name, p.Path, btoi(scalar)+btoi(delivered))
			}
			names[p.Name] = true
		}
	}
	if want := reflect.TypeFor[Scalars]().NumField() + reflect.TypeFor[Delivered]().NumField(); len(names) != want {
		t.Errorf("%d distinct feedback rules for %d scalars and delivered ids", len(names), want)
	}
	// The rules are a copy: a caller changing them does not change the contract.
	rules[0].JsonPaths[0].Name = "changed"
	if FeedbackRules()[0].JsonPaths[0].Name == "changed" {
		t.Error("FeedbackRules hands out the package's own slice")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
