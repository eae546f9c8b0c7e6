// Package cli is the argocd-pull-addon binary's command tree: one binary, a subcommand
// per part. cmd/argocd-pull-addon runs it; the reference docs are generated from it.
package cli

import (
	goflag "flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli/report"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/cmp"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/finalizers"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/hub/manager"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/agent"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/version"
)

// NewRootCommand is the binary's root command with every subcommand and klog's flags,
// as argocd-pull-addon.
func NewRootCommand() *cobra.Command {
	return NewRootCommandAs(BinaryName)
}

// NewRootCommandAs is NewRootCommand for the binary run from file argv0 (os.Args[0]):
// the same commands, with usage, help and examples naming it as the user invoked it
// (CommandName).
func NewRootCommandAs(argv0 string) *cobra.Command {
	name := CommandName(argv0)
	root := &cobra.Command{
		Use:   BinaryName,
		Short: "Argo CD pull model for Open Cluster Management, as an OCM addon",
		// Errors are already logged by the subcommand; usage is noise after a runtime failure.
		SilenceUsage: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			ctrl.SetLogger(klog.NewKlogr())
		},
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
	}
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlagSet(klogFlags)

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
