package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// markdownLink is an inline link or image: [text](target) or [text](target "title").
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// docFiles are the pages users and developers read: the README, CONTRIBUTING.md,
// examples/README.md and everything under docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"), filepath.Join(root, "examples", "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// headingAnchors are the anchors GitHub gives the headings of a Markdown page.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- ]`)
	for _, line := range outsideCodeBlocks(text) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		anchors[slug] = true
	}
	return anchors
}

// outsideCodeBlocks are the lines of text that are not inside a fenced code block.
func outsideCodeBlocks(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// TestRelativeLinksResolve fails when a relative link of the docs names a file that does
// not exist or a heading its page does not have.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := docFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found only %d doc files: the walk is broken", len(files))
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchorsOf[path] = headingAnchors(string(raw))
		return anchorsOf[path]
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, line := range outsideCodeBlocks(string(raw)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s: link %q: %s does not exist", rel, target, path)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(resolved)[anchor] {
					t.Errorf("%s: link %q: no heading with anchor #%s", rel, target, anchor)
				}
			}
		}
	}
}
