package cmp

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Generate renders the source in dir and returns the ManifestWork YAML for env.
func Generate(ctx context.Context, dir string, env Environment) ([]byte, error) {
	manifests, err := Render(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	if manifests, err = Normalize(manifests, env.Namespace); err != nil {
		return nil, err
	}
	work, err := BuildManifestWork(manifests, env)
	if err != nil {
		return nil, err
	}
	return MarshalManifestWork(work)
}

// NewCommand returns `cmp`, the Config Management Plugin's commands. There is no `init`:
// generate reads the source as it is and fetches nothing, so there is nothing to prepare
// (Argo CD's plugin.yaml makes init optional).
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cmp",
		Short: "Argo CD Config Management Plugin: deliver an Application's manifests as one OCM ManifestWork",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newGenerateCommand())
	return cmd
}

func newGenerateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Print the ManifestWork wrapping the manifests of the current directory (run by Argo CD in the source path)",
		Long: `Reads the manifests of the current directory (plain YAML and JSON, recursively; or
kustomize build when a kustomization file exists; or helm template when Chart.yaml exists)
and prints one ManifestWork for the target cluster on stdout.

Environment (set by Argo CD; plugin env entries arrive prefixed with ARGOCD_ENV_):
  ` + EnvAppName + `        the Application; names the ManifestWork
  ` + EnvAppNamespace + `   the destination namespace: the target cluster's namespace on the hub
  ` + EnvCluster + `      plugin env CLUSTER: the target cluster, overriding the destination namespace
  ` + EnvNamespace + `    plugin env NAMESPACE: namespace on the cluster for objects without one
  ` + EnvHelmValues + `  plugin env HELM_VALUES: comma-separated values files for helm template, inside the repository
  ` + EnvAppRevision + `    recorded on the ManifestWork
  ` + EnvArgoCDNamespace + `            Argo CD's namespace (set by the sidecar), the Application's namespace`,
		Args: cobra.NoArgs,
		// A failure is printed on stderr, which Argo CD shows on the Application; usage
		// would only bury it.
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := EnvironmentFrom(os.Getenv)
			if err != nil {
				return err
			}
			dir, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("reading the source directory: %w", err)
			}
			out, err := Generate(cmd.Context(), dir, env)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
}
