// Command sandbox is `make sandbox`, the README's first command: it brings up a hub and
// managed clusters with real OCM, real Argo CD and argocd-pull-addon (test/fleet), applies
// the guestbook example, waits for its MulticlusterApplicationSetReport and prints it as a
// table, then keeps running, re-printing the table when the report changes, until Ctrl-C.
// It prints how to point kubectl at the hub and at each cluster, and stops everything it
// started when it stops.
//
// Argo CD's application-controller binds its metrics port on all interfaces, so the fleet
// runs in a private network namespace: the command re-executes itself in a new one and
// hands the child listening sockets opened on the host's loopback, which the child
// forwards to the API servers (see reexec.go). Run under `unshare --net`, where no host
// socket is to be had, it runs the fleet directly and prints nsenter commands instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	clusters int
	dir      string
	keep     bool
	timeout  time.Duration
}

func main() {
	var opts options
	flag.IntVar(&opts.clusters, "clusters", 2, "How many managed clusters join the hub (cluster1, cluster2, ...).")
	flag.StringVar(&opts.dir, "dir", "", "Where the sandbox keeps its kubeconfigs, logs, data and the example's git repository; "+
		"empty: a temporary directory, removed at exit unless --keep or the sandbox failed.")
	flag.BoolVar(&opts.keep, "keep", false, "Keep the temporary directory at exit.")
	flag.DurationVar(&opts.timeout, "timeout", 10*time.Minute, "How long the set-up may take, up to the first complete report.")
	flag.Parse()
	if opts.clusters < 1 {
		fmt.Fprintln(os.Stderr, "sandbox: --clusters must be at least 1")
		os.Exit(2)
	}

	var err error
	if dir := os.Getenv(envChildDir); dir != "" {
		err = runChild(opts, dir)
	} else {
		err = runParent(opts)
	}
	var code exitCode
	switch {
	case errors.As(err, &code):
		// The child has said why already.
		os.Exit(int(code))
	case err != nil:
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

// exitCode is a child's exit status, passed on without a message of its own.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// stopOnSignal returns a context that the first SIGINT, SIGTERM or SIGHUP cancels. Later
// signals only say that the sandbox is stopping: stopping takes seconds, and cutting it
// short would leave API servers and Argo CD behind.
func stopOnSignal() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		var first time.Time
		for range signals {
			if ctx.Err() == nil {
				fmt.Println("\nStopping the sandbox and everything it started...")
				first = time.Now()
				cancel()
				continue
			}
			// One Ctrl-C can arrive twice (from the terminal and passed on by a
			// wrapper such as timeout): answer only a later one.
			if time.Since(first) > time.Second {
				fmt.Println("Still stopping, please wait.")
			}
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel()
	}
}
