// Command argocd-pull-addon is the one binary of the Argo CD pull-model addon for Open
// Cluster Management: `manager` runs on the hub, `agent` on each managed cluster, `cmp`
// in a sidecar of the hub's Argo CD repo server (hub-rendered delivery), `release-finalizers`
// as the hub chart's uninstall hook, `report` for people reading the reports. Installed as
// kubectl-argocd_pull on PATH it is the kubectl plugin `kubectl argocd-pull`.
package main

import (
	"os"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/cli"
)

func main() {
	if err := cli.NewRootCommandAs(os.Args[0]).Execute(); err != nil {
		os.Exit(1)
	}
}
