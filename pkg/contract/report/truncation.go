package report

import (
	"strings"
	"unicode/utf8"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// ellipsis ends every shortened text, so a reader sees it was cut.
const ellipsis = "…"

// truncation counts what a report leaves out while it is built.
type truncation struct {
	omittedResources  int
	omittedConditions int
	omittedChildren   int
	shortenedMessages int
}

// result is the report's Truncation: nil when nothing was left out.
func (t *truncation) result() *appsv1alpha1.Truncation {
	if t.omittedResources == 0 && t.omittedConditions == 0 && t.omittedChildren == 0 && t.shortenedMessages == 0 {
		return nil
	}
	return &appsv1alpha1.Truncation{
		OmittedResources:  int32(t.omittedResources),
		OmittedConditions: int32(t.omittedConditions),
		OmittedChildren:   int32(t.omittedChildren),
		ShortenedMessages: int32(t.shortenedMessages),
	}
}

// message returns s cut to max characters (the API server counts characters, not bytes),
// counting it when it had to be cut.
func (t *truncation) message(s string, max int) string {
	cut, ok := Shorten(s, max)
	if ok {
		t.shortenedMessages++
	}
	return cut
}

// revision returns a sync revision within the schema's bound. Git SHAs, tags and chart
// versions are far shorter; an over-long one is cut like a message and counted as one.
func (t *truncation) revision(s string) string {
	return t.message(s, maxRevisionLength)
}

// revisions bounds the revisions of a multi-source Application. The API has no counter
// for dropped revisions; Argo CD allows far fewer sources than MaxRevisions in practice.
func (t *truncation) revisions(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	n := min(len(in), appsv1alpha1.MaxRevisions)
	out := make([]string, n)
	for i := range out {
		out[i] = t.revision(in[i])
	}
	return out
}

// Shorten cuts s to at most max characters, the last of them an ellipsis, and says
// whether it had to. Characters, not bytes: the API server bounds strings in characters,
// and a cut never splits one. A max of 0 or less leaves nothing.
func Shorten(s string, max int) (string, bool) {
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	if max <= 0 {
		return "", true
	}
	keep := max - utf8.RuneCountInString(ellipsis)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if keep <= 0 {
			break
		}
		b.WriteRune(r)
		keep--
	}
	b.WriteString(ellipsis)
	return b.String(), true
}
