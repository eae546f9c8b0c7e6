package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedisServerBinaryPrefersTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "redis-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Another redis-server first on PATH: $REDIS_SERVER wins over it.
	onPath := t.TempDir()
	if err := os.WriteFile(filepath.Join(onPath, "redis-server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)

	t.Setenv(RedisServerEnv, bin)
	if got, err := RedisServerBinary(); err != nil || got != bin {
		t.Errorf("with $%s=%s: got %q, %v", RedisServerEnv, bin, got, err)
	}

	missing := filepath.Join(dir, "redis-7.0.15", "redis-server")
	t.Setenv(RedisServerEnv, missing)
	if _, err := RedisServerBinary(); err == nil || !strings.Contains(err.Error(), "$"+RedisServerEnv+"="+missing) {
		t.Errorf("with $%s naming no file: error %v, want one naming the variable and the path", RedisServerEnv, err)
	}

	t.Setenv(RedisServerEnv, "")
	if got, err := RedisServerBinary(); err != nil || got != filepath.Join(onPath, "redis-server") {
		t.Errorf("without $%s: got %q, %v, want the one on PATH", RedisServerEnv, got, err)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := RedisServerBinary(); err == nil || !strings.Contains(err.Error(), "make redis") {
		t.Errorf("with neither: error %v, want one saying how to get it", err)
	}
}
