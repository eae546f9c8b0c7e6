package main

// The sandbox's two processes. The parent stays in the host's network namespace, opens a
// listening socket per API server on the host's 127.0.0.1 and re-executes itself in a new
// network namespace, handing the sockets over. A socket keeps the namespace it was created
// in, so the child, inside the private namespace where the whole fleet runs, accepts the
// host's connections on them and copies each to its API server there. The API servers'
// certificates are for 127.0.0.1, so kubeconfigs naming https://127.0.0.1:<host port> work
// from the host with the fleet's own credentials and CA. The child is also the init of a
// new PID namespace, so that nothing it started can outlive it.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/fleet"
)

const (
	// envChildDir marks the re-executed child and carries the sandbox's directory.
	envChildDir = "SANDBOX_CHILD_DIR"
	// envHostListeners is how many listening sockets the child inherits, from file
	// descriptor 3 on: the hub's, then cluster1's, cluster2's...
	envHostListeners = "SANDBOX_HOST_LISTENERS"
)

// runParent runs the sandbox in a child in a new network namespace and waits for it;
// already in a private namespace, it runs the sandbox itself.
func runParent(opts options) (err error) {
	dir, temporary, err := sandboxDir(opts.dir)
	if err != nil {
		return err
	}
	defer func() {
		switch {
		case temporary && err == nil && !opts.keep:
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				err = fmt.Errorf("removing %s: %w", dir, rmErr)
			}
		case temporary:
			// A failed run keeps its logs.
			fmt.Printf("The sandbox's directory (logs, kubeconfigs) is kept: %s\n", dir)
		}
	}()

	if fleet.InPrivateNetNS() {
		// Run as `unshare --net bin/sandbox`: no socket of the host's namespace can be
		// had from here, so the user reaches the fleet with nsenter.
		ctx, stop := stopOnSignal()
		defer stop()
		if err := fleet.SetUpPrivateNetNS(); err != nil {
			return fmt.Errorf("setting up the private network namespace: %w", err)
		}
		return runSandbox(ctx, opts, dir, nil)
	}

	files, err := openHostListeners(1 + opts.clusters)
	if err != nil {
		return err
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0] // for ps
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envChildDir+"="+dir, envHostListeners+"="+strconv.Itoa(len(files)))
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A PID namespace too: the child is its init, and when it dies, however it dies,
		// the kernel kills every process left in it (the API servers and etcd have no
		// Pdeathsig of their own).
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		// A process group of its own: Ctrl-C reaches the parent only, which passes it
		// on, so the child stops Argo CD, OCM and the API servers in order rather than
		// all of them getting the terminal's SIGINT at once.
		Setpgid: true,
		// The child does not outlive the parent.
		Pdeathsig: syscall.SIGKILL,
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	startErr := cmd.Start()
	// The child has its own copies of the sockets now.
	for _, f := range files {
		f.Close()
	}
	if startErr != nil {
		return fmt.Errorf("starting the sandbox in a new network namespace (needs root or CAP_SYS_ADMIN; "+
			"or run it as `unshare --net bin/sandbox`): %w", startErr)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case s := <-signals:
			// Passed on, including a second Ctrl-C: the child decides what it means.
			_ = cmd.Process.Signal(s)
		case err := <-exited:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return exitCode(exit.ExitCode())
			}
			return err
		}
	}
}

// sandboxDir is dir, created if missing, or a new temporary directory.
func sandboxDir(dir string) (_ string, temporary bool, err error) {
	if dir == "" {
		dir, err = os.MkdirTemp("", "argocd-pull-sandbox-")
		if err != nil {
			return "", false, fmt.Errorf("creating the sandbox's directory: %w", err)
		}
		return dir, true, nil
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false, fmt.Errorf("the sandbox's directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("creating the sandbox's directory: %w", err)
	}
	return dir, false, nil
}

// openHostListeners listens on n ports of the host's 127.0.0.1 and returns the sockets as
// files to hand to the child.
func openHostListeners(n int) ([]*os.File, error) {
	files := make([]*os.File, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listening on the host's loopback: %w", err), closeAll(files))
		}
		f, err := l.(*net.TCPListener).File()
		// File duplicates the socket: the listener itself is not needed any more.
		l.Close()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("passing on a listening socket: %w", err), closeAll(files))
		}
		files = append(files, f)
	}
	return files, nil
}

func closeAll(files []*os.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// runChild is the re-executed child: in the new network namespace, it sets it up and runs
// the sandbox with the host's sockets it inherited.
func runChild(opts options, dir string) error {
	if !fleet.InPrivateNetNS() {
		return errors.New("re-executed into a new network namespace, but it has interfaces other than lo")
	}
	ctx, stop := stopOnSignal()
	defer stop()
	n, err := strconv.Atoi(os.Getenv(envHostListeners))
	if err != nil || n != 1+opts.clusters {
		return fmt.Errorf("%s=%q: want %d listening sockets, one per API server", envHostListeners, os.Getenv(envHostListeners), 1+opts.clusters)
	}
	listeners := make([]net.Listener, n)
	for i := range listeners {
		f := os.NewFile(uintptr(3+i), fmt.Sprintf("host-listener-%d", i))
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("using inherited socket %d: %w", i, err)
		}
		listeners[i] = l
	}
	if err := fleet.SetUpPrivateNetNS(); err != nil {
		return fmt.Errorf("setting up the private network namespace: %w", err)
	}
	return runSandbox(ctx, opts, dir, listeners)
}
