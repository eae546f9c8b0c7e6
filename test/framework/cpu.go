package framework

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU time for benchmarks, read from /proc (Linux only; 0 elsewhere): of one process,
// the benchmark's own included (os.Getpid()), and of the whole machine.

// ProcessCPUSeconds is the user+system CPU time of pid so far, all its threads (0 when
// unknown). Its resolution is a clock tick (10 ms).
func ProcessCPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid == 0 || err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// MachineCPU is the busy and total CPU time of the whole machine so far, every core, in
// clock ticks, from /proc/stat: busy is everything but idle and iowait. The busy share of
// a phase is the difference of busy over the difference of all.
func MachineCPU() (busy, all float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i >= 8 { // guest time is already in user time
			break
		}
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all
}

// IdleCPURate is pid's CPU seconds per second over window, measured after settle: the
// rate a benchmark takes off what it measures of a server that keeps its own loops running.
func IdleCPURate(pid int, settle, window time.Duration) float64 {
	time.Sleep(settle)
	before, start := ProcessCPUSeconds(pid), time.Now()
	time.Sleep(window)
	return (ProcessCPUSeconds(pid) - before) / time.Since(start).Seconds()
}
