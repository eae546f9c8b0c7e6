package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli"
)

func TestEveryFlagIsExplained(t *testing.T) {
	root := cli.NewRootCommand()
	for _, name := range []string{"manager", "agent", "cmp", "release-finalizers", "report", "version"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("subcommand %q missing: %v", name, err)
		}
		if cmd.Short == "" {
			t.Errorf("%s has no short description", name)
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("%s --%s has no help text", name, f.Name)
			}
		})
	}
}

func TestEndpointsDefaultToLoopback(t *testing.T) {
	root := cli.NewRootCommand()
	for _, name := range []string{"manager", "agent"} {
		cmd, _, _ := root.Find([]string{name})
		for _, flag := range []string{"metrics-bind-address", "health-probe-bind-address"} {
			f := cmd.Flags().Lookup(flag)
			if f == nil {
				t.Fatalf("%s has no --%s", name, flag)
			}
			host, _, err := net.SplitHostPort(f.DefValue)
			if err != nil || !net.ParseIP(host).IsLoopback() {
				t.Errorf("%s --%s defaults to %q, want a loopback address", name, flag, f.DefValue)
			}
		}
	}
}

func TestManagerAndAgentDefaultsDoNotCollide(t *testing.T) {
	root := cli.NewRootCommand()
	seen := map[string]string{}
	for _, name := range []string{"manager", "agent"} {
		cmd, _, _ := root.Find([]string{name})
		for _, flag := range []string{"metrics-bind-address", "health-probe-bind-address"} {
			addr := cmd.Flags().Lookup(flag).DefValue
			if other, ok := seen[addr]; ok {
				t.Errorf("%s --%s and %s both default to %s", name, flag, other, addr)
			}
			seen[addr] = name + " --" + flag
		}
	}
}

func TestVersionPrintsTheBinaryName(t *testing.T) {
	root := cli.NewRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "argocd-pull-addon ") {
		t.Errorf("version printed %q", out.String())
	}
}

func TestSubcommandsRefuseArguments(t *testing.T) {
	for _, name := range []string{"manager", "agent", "version"} {
		root := cli.NewRootCommand()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs([]string{name, "unexpected"})
		var ran bool
		cmd, _, _ := root.Find([]string{name})
		cmd.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
		cmd.Run = nil
		if err := root.Execute(); err == nil || ran {
			t.Errorf("%s accepted a positional argument", name)
		}
	}
}
