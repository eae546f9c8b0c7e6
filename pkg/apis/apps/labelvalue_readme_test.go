package apps

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/using.md, "A hashed label value without Go", gives a shell one-liner for the report
// labels' values and the value it prints for its example. These tests take the block from
// the page itself, so the documentation cannot drift from ReportLabelValue unnoticed:
// the documented value is the Go function's, and the one-liner prints the Go function's
// value for the example and for the values at the edges of the rule.

// readmeLabelValueBlock is the shell block after the README's marker comment: the line
// setting v, the one-liner, and the comment with the value it prints.
type readmeLabelValueBlock struct {
	example  string // the value of v the README sets
	script   string // the lines after v='…'
	expected string // what the README says it prints
}

var assignV = regexp.MustCompile(`^v='([^']*)'`)

func readLabelValueBlock(t *testing.T) readmeLabelValueBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "using.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- The block below is run by pkg/apis/apps/labelvalue_readme_test.go"
	_, after, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("docs/using.md has no %q marker before the hashed label value block", marker)
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("no ```sh block after the README's marker")
	}
	body, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("the README's ```sh block is not closed")
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("the README's block has %d lines, want v='…', the one-liner and '# <value>':\n%s", len(lines), body)
	}
	m := assignV.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("the README's block does not start with v='…': %q", lines[0])
	}
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "# ") {
		t.Fatalf("the README's block does not end with '# <value it prints>': %q", last)
	}
	return readmeLabelValueBlock{
		example:  m[1],
		script:   strings.Join(lines[1:len(lines)-1], "\n"),
		expected: strings.TrimPrefix(last, "# "),
	}
}

func TestREADMELabelValueExampleIsTheGoFunctions(t *testing.T) {
	b := readLabelValueBlock(t)
	namespace, name, ok := strings.Cut(b.example, ".")
	if !ok {
		t.Fatalf("the README's example %q is not <namespace>.<name>", b.example)
	}
	if got := HubApplicationLabelValue(namespace, name); got != b.expected {
		t.Fatalf("README says %q for %q; HubApplicationLabelValue(%q, %q) = %q", b.expected, b.example, namespace, name, got)
	}
	if len(b.example) <= maxLabelValueLength {
		t.Fatalf("the README's example %q is not longer than %d characters: it shows no hashing", b.example, maxLabelValueLength)
	}
}

func TestREADMELabelValueOneLinerPrintsTheGoFunctionsValue(t *testing.T) {
	// The README's shell: POSIX sh with coreutils' cut and sha256sum and sed, as on every
	// Debian machine this project's Makefile sets up. Missing tools fail the test rather
	// than skip it: a skipped check would pass unnoticed.
	for _, tool := range []string{"sh", "cut", "sed", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the README's one-liner: %v", tool, err)
		}
	}
	b := readLabelValueBlock(t)
	long := "team-payments." + strings.Repeat("rollout-", 8) + "eu"
	// v is what the README's shell gets, want the Go function's value.
	cases := map[string]struct{ v, want string }{
		"the README's example": {b.example, b.expected},
		"short, kept as is":    {"argocd.cluster1-guestbook-app", HubApplicationLabelValue("argocd", "cluster1-guestbook-app")},
		"exactly 63, kept":     {"argocd." + strings.Repeat("a", 56), HubApplicationLabelValue("argocd", strings.Repeat("a", 56))},
		"64, hashed":           {"argocd." + strings.Repeat("a", 57), HubApplicationLabelValue("argocd", strings.Repeat("a", 57))},
		// The 46-character cut ends in "-", which is trimmed before the hash.
		"cut ends in a separator": {"argocd." + strings.Repeat("b", 38) + "-" + strings.Repeat("c", 30),
			HubApplicationLabelValue("argocd", strings.Repeat("b", 38)+"-"+strings.Repeat("c", 30))},
		"an ApplicationSet <namespace>/<name>": {long, ApplicationSetLabelValue(strings.Replace(long, ".", "/", 1))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("sh", "-c", "v='"+tc.v+"'\n"+b.script).CombinedOutput()
			if err != nil {
				t.Fatalf("the README's one-liner failed for %q: %v\n%s", tc.v, err, out)
			}
			if got := strings.TrimRight(string(out), "\n"); got != tc.want {
				t.Fatalf("the README's one-liner prints %q for %q; the Go function gives %q", got, tc.v, tc.want)
			}
		})
	}
}
