package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEveryAgentFlagIsDecided fails when a flag of `argocd-pull-addon agent` is in neither
// table of docs/configuring-agents.md's agent settings: the variables that set a flag, and
// the flags no variable sets with the reason why. A new agent flag needs that decision.
func TestEveryAgentFlagIsDecided(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "configuring-agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(data), "### Agent settings (`customizedVariables`)")
	if !found {
		t.Fatal("docs/configuring-agents.md has no section \"Agent settings (`customizedVariables`)\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	root, _ := rootCommand()
	agent, _, err := root.Find([]string{"agent"})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	agent.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		checked++
		if !tableNames(section, "`--"+f.Name+"`") {
			t.Errorf("agent flag --%s is in no table of docs/configuring-agents.md's agent settings: "+
				"add a customizedVariable for it, or say why none sets it", f.Name)
		}
	})
	if checked == 0 {
		t.Fatal("the agent command has no flags: the test checks nothing")
	}
}

// tableNames tells whether a table row of section names code in its first two cells.
func tableNames(section, code string) bool {
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 2 {
			continue
		}
		if strings.Contains(cells[0], code) || strings.Contains(cells[1], code) {
			return true
		}
	}
	return false
}
