package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Process helpers for benchmarks: find the API server's and etcd's processes and read
// a process's memory from /proc (Linux only; an error elsewhere). cpu.go reads CPU time.

// FindProcess returns the PID of the process whose command line holds name (as the
// suffix of its executable) and arg, or 0.
func FindProcess(name, arg string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], name) && slices.Contains(args, arg) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	return 0
}

// PIDs returns the process IDs of the API server's kube-apiserver and etcd, found by the
// ports they serve (0 when not found).
func (a *APIServer) PIDs() (apiserver, etcd int) {
	cp := a.Env.ControlPlane
	return FindProcess("kube-apiserver", "--secure-port="+cp.APIServer.SecureServing.Port),
		FindProcess("etcd", "--listen-client-urls="+cp.Etcd.URL.String())
}

// ProcessPeakRSS is the peak resident set size of pid in bytes (VmHWM), since the process
// started or since the last ResetPeakRSS.
func ProcessPeakRSS(pid int) (int64, error) {
	return procStatusKiB(pid, "VmHWM:")
}

// ProcessRSS is the current resident set size of pid in bytes (VmRSS).
func ProcessRSS(pid int) (int64, error) {
	return procStatusKiB(pid, "VmRSS:")
}

// ResetPeakRSS sets pid's VmHWM back to its current RSS, so that ProcessPeakRSS measures a
// phase. It needs permission to write /proc/<pid>/clear_refs (the process's owner).
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// FormatBytes prints n in MiB, or KiB below one MiB.
func FormatBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func procStatusKiB(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s of process %d: %w", key, pid, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}
