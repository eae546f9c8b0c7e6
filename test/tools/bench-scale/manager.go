package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/test/framework"
)

// managerProcess is the real manager binary (`argocd-pull-addon manager`) running against
// the hub as a process of its own, so that its CPU and memory are its own.
type managerProcess struct {
	cmd        *exec.Cmd
	metricsURL string
	readyURL   string
	logPath    string
	exited     chan struct{}
}

// buildManager builds the binary into dir, the way `make build` does (without stripping).
func buildManager(dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "argocd-pull-addon")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/argocd-pull-addon")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the manager: %w", err)
	}
	return out, nil
}

// startManager runs `binary manager` against the hub of kubeconfig, with its logs in
// logPath and extraEnv added to the benchmark's environment, and waits until it is ready.
func startManager(ctx context.Context, binary, kubeconfig, logPath string, extraArgs, extraEnv []string) (*managerProcess, error) {
	ports, err := framework.FreePorts(2)
	if err != nil {
		return nil, err
	}
	metricsPort, probePort := ports[0], ports[1]
	logs, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"manager", "--kubeconfig", kubeconfig,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort)}, extraArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		logs.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	m := &managerProcess{
		cmd:        cmd,
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		readyURL:   fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
		logPath:    logPath,
		exited:     make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); logs.Close(); close(m.exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-m.exited:
			return nil, fmt.Errorf("the manager exited during start-up; see %s", logPath)
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(m.readyURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("the manager was not ready within 2 minutes; see %s", logPath)
		}
	}
}

func (m *managerProcess) pid() int { return m.cmd.Process.Pid }

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// requests reads the manager's client requests to the API server so far, by HTTP method
// (and, under conflictPrefix, those answered 409), from its rest_client_requests_total
// metric.
func (m *managerProcess) requests() (map[string]float64, error) {
	resp, err := http.Get(m.metricsURL)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseRequests(resp.Body)
}

// queueDepths reads the manager's controllers' workqueue depths (workqueue_depth by name).
func (m *managerProcess) queueDepths() (map[string]float64, error) {
	resp, err := http.Get(m.metricsURL)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if name, labels, v, ok := metricLine(sc.Text()); ok && name == "workqueue_depth" {
			out[labels["name"]] = v
		}
	}
	return out, sc.Err()
}

func parseRequests(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, labels, v, ok := metricLine(sc.Text())
		if !ok || name != "rest_client_requests_total" {
			continue
		}
		out[labels["method"]] += v
		if labels["code"] == "409" {
			out[conflictPrefix+labels["method"]] += v
		}
	}
	return out, sc.Err()
}

// conflictPrefix marks the requests of a method answered 409 Conflict in a requests map.
const conflictPrefix = "409 "

// total is the number of requests in a requests map.
func total(byMethod map[string]float64) float64 {
	var n float64
	for k, v := range byMethod {
		if !strings.HasPrefix(k, conflictPrefix) {
			n += v
		}
	}
	return n
}

// conflicts is the number of writes answered 409 Conflict in a requests map.
func conflicts(byMethod map[string]float64) float64 {
	return byMethod[conflictPrefix+"PUT"] + byMethod[conflictPrefix+"PATCH"] + byMethod[conflictPrefix+"POST"]
}

// writes is the number of write requests (POST, PUT, PATCH, DELETE) in a requests map.
func writes(byMethod map[string]float64) float64 {
	return byMethod["POST"] + byMethod["PUT"] + byMethod["PATCH"] + byMethod["DELETE"]
}
