// Package cli is the argocd-pull-addon binary's command tree: one binary, a subcommand
// per part. cmd/argocd-pull-addon runs it; the reference docs are generated from it.
package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	// Registers --logging-format=json, as in Kubernetes' own components.
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/cmp"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/finalizers"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
)

func init() {
	// The command tree may run more than once in a process (the tests run it per case):
	// applying the same logging configuration again is no change, a different one an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// NewRootCommand is the binary's root command with every subcommand and the logging
// flags of Kubernetes' components (k8s.io/component-base/logs), as argocd-pull-addon.
func NewRootCommand() *cobra.Command {
	return NewRootCommandAs(BinaryName)
}

// NewRootCommandAs is NewRootCommand for the binary run from file argv0 (os.Args[0]):
// the same commands, with usage, help and examples naming it as the user invoked it
// (CommandName).
func NewRootCommandAs(argv0 string) *cobra.Command {
	name := CommandName(argv0)
	logging := logsapi.NewLoggingConfiguration()
	root := &cobra.Command{
		Use:   BinaryName,
		Short: "Argo CD pull model for Open Cluster Management, as an OCM addon",
		// Errors are already logged by the subcommand; usage is noise after a runtime failure.
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := logsapi.ValidateAndApply(logging, nil); err != nil {
				return fmt.Errorf("logging flags: %w", err)
			}
			// klog now writes in the chosen format; controller-runtime logs through it.
			ctrl.SetLogger(klog.Background())
			return nil
		},
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
	}
	addLoggingFlags(logging, root.PersistentFlags())

	root.AddCommand(manager.NewCommand(), agent.NewCommand(), cmp.NewCommand(), finalizers.NewCommand(), report.NewCommand(name), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.String())
		},
	})
	return root
}

// addLoggingFlags adds component-base's logging flags except its alpha ones
// (--log-*-split-stream, --log-*-info-buffer-size): they need the LoggingAlphaOptions
// feature gate, which this binary has no flag to enable, so they could only be refused.
func addLoggingFlags(logging *logsapi.LoggingConfiguration, to *pflag.FlagSet) {
	all := pflag.NewFlagSet("logging", pflag.ContinueOnError)
	logsapi.AddFlags(logging, all)
	all.VisitAll(func(f *pflag.Flag) {
		if !strings.HasPrefix(f.Usage, "[Alpha]") {
			to.AddFlag(f)
		}
	})
}
