package framework

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Debian's redis-server, as Argo CD's installation runs Redis: with a password, here in
// memory only and on loopback. The fleet runs one per cluster for Argo CD (test/fleet);
// the agent's integration tests run one to read resource trees from.

// RedisServerEnv names the redis-server binary the tests run. The Makefile sets it to the
// copy `make redis` unpacks into bin/ (hack/fetch-redis.sh), so that no system Redis
// service has to be installed to run the tests.
const RedisServerEnv = "REDIS_SERVER"

// RedisServerBinary is the redis-server that $REDIS_SERVER names, or else the one on PATH.
func RedisServerBinary() (string, error) {
	if bin := os.Getenv(RedisServerEnv); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("$%s=%s is not an executable redis-server (`make redis` unpacks one into bin/): %w", RedisServerEnv, bin, err)
		}
		return bin, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("no redis-server: set $%s, e.g. %s=$PWD/bin/redis-<version>/redis-server after `make redis` (the Makefile's test targets set it), or put one on PATH: %w",
			RedisServerEnv, RedisServerEnv, err)
	}
	return bin, nil
}

// RedisServerArgs are redis-server's arguments: 127.0.0.1:port, password required, no
// RDB snapshots and no append-only file (nothing written to disk; dir is its working
// directory all the same).
func RedisServerArgs(port int, password, dir string) []string {
	return []string{"--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--requirepass", password, "--dir", dir}
}

// NewRedisPassword is a random password.
func NewRedisPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// RedisServer is a redis-server started by StartRedisServer.
type RedisServer struct {
	Addr     string
	Password string
	cmd      *exec.Cmd
	done     chan error
}

// StartRedisServer starts redis-server on a free loopback port with a new password,
// working directory dir, and waits until it accepts connections. Stop it.
func StartRedisServer(dir string) (*RedisServer, error) {
	bin, err := RedisServerBinary()
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	password, err := NewRedisPassword()
	if err != nil {
		return nil, err
	}
	r := &RedisServer{Addr: LoopbackAddress(ports[0]), Password: password, done: make(chan error, 1)}
	r.cmd = exec.Command(bin, RedisServerArgs(ports[0], password, dir)...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
		if err == nil {
			conn.Close()
			return r, nil
		}
		select {
		case werr := <-r.done:
			return nil, fmt.Errorf("redis-server exited: %v", werr)
		default:
		}
		if time.Now().After(deadline) {
			_ = r.Stop()
			return nil, fmt.Errorf("redis-server not listening on %s after 30s: %w", r.Addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops redis-server (SIGTERM, then SIGKILL after 10 s).
func (r *RedisServer) Stop() error {
	if r == nil || r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	return nil
}
