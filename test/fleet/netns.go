package fleet

// Running a fleet inside a private network namespace.
//
// Argo CD's application-controller binds its metrics listener on all interfaces (no flag
// changes that). On a shared machine the fleet therefore runs in a network namespace of
// its own, where only a loopback interface exists: every server of the fleet is reachable
// on 127.0.0.1 and nothing is reachable from outside. Two ways:
//
//   - From TestMain: os.Exit(fleet.RunInPrivateNetNS(m)). When the test binary is not in a
//     private namespace yet, it re-executes itself in a new one (clone with CLONE_NEWNET;
//     root or CAP_SYS_ADMIN needed) and exits with the child's status; in the namespace it
//     brings lo up and runs the tests. So plain `go test ./test/e2e/argocd` works.
//   - By hand, as `make test-argocd-smoke` does:
//     go test -c -o bin/argocd-smoke.test ./test/e2e/argocd
//     unshare --net bin/argocd-smoke.test -test.v
//     (RunInPrivateNetNS sees only lo, sets the namespace up and runs the tests directly).
//
// In the namespace lo is up and also carries NetNSAdvertiseAddress with a default route
// (kube-apiserver will not start without one): see SetUpPrivateNetNS.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// envPrivateNetNS marks the re-executed child, so a failure to isolate cannot loop.
const envPrivateNetNS = "FLEET_PRIVATE_NETNS"

// InPrivateNetNS reports whether the process's network namespace is not PID 1's and has
// no interface but loopback.
func InPrivateNetNS() bool {
	self, err1 := os.Readlink("/proc/self/ns/net")
	init, err2 := os.Readlink("/proc/1/ns/net")
	if err1 == nil && err2 == nil && self == init {
		return false
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// RunInPrivateNetNS runs m inside a private network namespace set up by SetUpPrivateNetNS,
// re-executing the test binary in a new namespace when needed, and returns the exit code
// for os.Exit.
func RunInPrivateNetNS(m *testing.M) int {
	if InPrivateNetNS() {
		if err := SetUpPrivateNetNS(); err != nil {
			fmt.Fprintf(os.Stderr, "fleet: setting up the private network namespace: %v\n", err)
			return 1
		}
		return m.Run()
	}
	if os.Getenv(envPrivateNetNS) != "" {
		fmt.Fprintln(os.Stderr, "fleet: re-executed into a new network namespace but it has interfaces other than lo")
		return 1
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envPrivateNetNS+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "fleet: running the tests in a private network namespace "+
			"(needs root or CAP_SYS_ADMIN; or run under `unshare --net`): %v\n", err)
		return 1
	}
	return 0
}

// NetNSAdvertiseAddress is the address SetUpPrivateNetNS puts on lo. kube-apiserver needs
// a default route and a non-loopback address to advertise (it refuses to start without
// one, even when bound to 127.0.0.1); nothing listens on it.
const NetNSAdvertiseAddress = "10.255.255.1"

// SetUpPrivateNetNS prepares the current (private) network namespace: lo up, with
// NetNSAdvertiseAddress on it and a default route through it, so that every address outside
// the namespace stays unreachable. It runs iproute2's `ip` (apt-get install iproute2).
func SetUpPrivateNetNS() error {
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "replace", NetNSAdvertiseAddress + "/32", "dev", "lo"},
		{"route", "replace", "default", "dev", "lo"},
	}
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s (is iproute2 installed?)", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
