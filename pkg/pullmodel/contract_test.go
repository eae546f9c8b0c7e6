package pullmodel

import (
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
)

// FeedbackValuesFor returns, for every JSONPath of the feedback rules in configs, a value
// of the form the work agent reports, so a test can feed a built ManifestWork's own rules
// to ScalarsFromFeedback.
func feedbackValuesFor(rules []workv1.FeedbackRule) []workv1.FeedbackValue {
	sample := map[string]string{
		".status.health.status":            "Healthy",
		".status.sync.status":              "Synced",
		".status.sync.revision":            "8f3c2b1",
		".status.operationState.phase":     "Succeeded",
		".status.operationState.startedAt": "2026-11-01T10:00:00Z",
	}
	var values []workv1.FeedbackValue
	for _, rule := range rules {
		for _, p := range rule.JsonPaths {
			v, ok := sample[p.Path]
			if !ok {
				v = "unexpected path " + p.Path
			}
			values = append(values, str(p.Name, v))
		}
	}
	return values
}

// TestFeedbackRulesAreReadBack: every value the rules ask the work agent for is one the
// parser reads into a scalar, and every scalar has a rule. Renaming a rule or a parser
// case alone fails here.
func TestFeedbackRulesAreReadBack(t *testing.T) {
	rules := FeedbackRules()
	values := feedbackValuesFor(rules)
	if len(values) != len(feedbackPaths) {
		t.Fatalf("rules ask for %d values, want %d", len(values), len(feedbackPaths))
	}
	for _, v := range values {
		one, err := ScalarsFromFeedback([]workv1.FeedbackValue{v})
		if err != nil {
			t.Errorf("value %q: %v", v.Name, err)
		}
		if one.IsEmpty() {
			t.Errorf("rule %q is not read back into any scalar", v.Name)
		}
	}
	all, err := ScalarsFromFeedback(values)
	if err != nil {
		t.Fatal(err)
	}
	if all.Health == nil || all.Sync == nil || all.Revision == nil || all.OperationPhase == nil || all.OperationStartedAt == nil {
		t.Errorf("scalars without a rule: %+v", all)
	}
	// The rules are a copy: a caller changing them does not change the contract.
	rules[0].JsonPaths[0].Name = "changed"
	if FeedbackRules()[0].JsonPaths[0].Name == "changed" {
		t.Error("FeedbackRules hands out the package's own slice")
	}
}
