// Command argocd is a multi-call binary of the Argo CD components the fleet tests run.
// Like Argo CD's own cmd/main.go, it picks the component from ARGOCD_BINARY_NAME or,
// when that is unset, from the name it was invoked as. Only the components the tests
// need are linked in, which keeps the cold build and the binary smaller:
//
//	argocd-application-controller, argocd-repo-server, argocd-cmp-server,
//	argocd-applicationset-controller, argocd-server, argocd-git-ask-pass
//
// and argocd-redis, an in-memory redis (miniredis, which Argo CD's own tests use) serving
// on --address, its TTLs following the wall clock, so that the tests need no redis-server.
//
// The repo-server runs `argocd` from PATH with ARGOCD_BINARY_NAME=argocd-git-ask-pass as
// git's askpass helper, so this binary is installed as bin/argocd/argocd.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	applicationset "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	apiserver "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// As in Argo CD's cmd/main.go: klog follows the configured log level and format.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	case "argocd-cmp-server":
		// The Config Management Plugin sidecar of the repo-server (hub-rendered delivery).
		command = cmpserver.NewCommand()
	case "argocd-applicationset-controller":
		command = applicationset.NewCommand()
	case "argocd-server":
		// The API server the UI and the CLI talk to (the hub's, for pulled Applications'
		// resource trees).
		command = apiserver.NewCommand()
	case "argocd-redis":
		command = redisCommand()
	case "argocd-git-ask-pass":
		command = gitaskpass.NewCommand()
		command.SilenceErrors = true
		command.SilenceUsage = true
	default:
		fmt.Fprintf(os.Stderr, "argocd: unknown component %q: set ARGOCD_BINARY_NAME to one of "+
			"argocd-application-controller, argocd-repo-server, argocd-cmp-server, argocd-applicationset-controller, argocd-server, argocd-git-ask-pass, argocd-redis\n", name)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		if !command.SilenceErrors {
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// redisCommand serves an in-memory redis on --address until SIGTERM or SIGINT.
func redisCommand() *cobra.Command {
	var address string
	command := &cobra.Command{
		Use:   "argocd-redis",
		Short: "In-memory redis (miniredis) for Argo CD's caches",
		RunE: func(*cobra.Command, []string) error {
			m := miniredis.NewMiniRedis()
			if err := m.StartAddr(address); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "argocd-redis: miniredis listening on %s\n", m.Addr())
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
			// miniredis never expires keys by itself: advance its clock with the real one,
			// or Argo CD's caches (resolved revisions, 3m by default) would never expire.
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			last := time.Now()
			for {
				select {
				case <-stop:
					m.Close()
					return nil
				case now := <-tick.C:
					m.FastForward(now.Sub(last))
					last = now
				}
			}
		},
	}
	command.Flags().StringVar(&address, "address", "127.0.0.1:6379", "host:port to listen on")
	return command
}
