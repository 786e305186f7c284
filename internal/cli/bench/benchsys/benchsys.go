// Package benchsys holds what txinbox bench reads of and does to the
// machine: its load, the process's peak memory, CPU-bound neighbours, a
// scratch SQLite file, a sleep that a context ends.
package benchsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PeakRSSMB reads the process's peak resident set size.
func PeakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

// LoadAverage is the machine's one-minute load average (0 where
// /proc/loadavg cannot be read).
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// TempSQLite checks that path names no file yet and returns it with a
// function that removes it and its -wal and -shm files.
func TempSQLite(path string) (string, func(), error) {
	if path == "" {
		return "", nil, errors.New("no --sqlite file")
	}
	if _, err := os.Stat(path); err == nil {
		return "", nil, fmt.Errorf("--sqlite %s exists: give a new file, it is removed afterwards", path)
	}
	return path, func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(filepath.Clean(path + suffix))
		}
	}, nil
}

func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
