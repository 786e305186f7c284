//go:build linux

package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchLightBusy runs the light load beside CPU-bound processes: the
// report says how busy the machine was (the busy processes alone keep four
// tasks runnable), and none of those processes outlives the run.
func TestBenchLightBusy(t *testing.T) {
	testdb.Require(t)
	var rep struct {
		P99      float64 `json:"light_load_p99_ms"`
		BusyP99  float64 `json:"light_load_busy_p99_ms"`
		Runnable float64 `json:"light_load_busy_runnable_tasks"`
		Results  []struct {
			Name     string `json:"name"`
			Messages int64  `json:"messages"`
			Effects  int64  `json:"effects"`
		} `json:"results"`
	}
	out := benchJSON(t, &rep, "--duration", "600ms", "--rounds", "1", "--only", "light,light-busy", "--duplicates", "0", "--busy", "4")
	if rep.P99 <= 0 || rep.BusyP99 <= 0 || len(rep.Results) != 2 || rep.Results[1].Name != "light-load 1000/s, 4 busy" || rep.Results[1].Messages == 0 {
		t.Fatalf("report = %s", out)
	}
	if rep.Runnable < 4 {
		t.Errorf("%.1f runnable tasks on average beside 4 CPU-bound processes", rep.Runnable)
	}
	if left := busyChildren(os.Getpid()); len(left) > 0 {
		t.Errorf("CPU-bound processes left running after the run: %v", left)
	}
}

// TestBenchLightBusyKilled: the busy processes run in sessions of their
// own, where a Ctrl-C to the bench does not reach them; SIGKILLed during
// light-busy, the bench leaves none of them spinning.
func TestBenchLightBusyKilled(t *testing.T) {
	testdb.Require(t)
	cmd := exec.Command(clitest.Bin(), "bench", "--db", testdb.URL(), "--only", "light-busy", "--duplicates", "0",
		"--rounds", "1", "--duration", "30s", "--busy", "2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // killed below, or gone
	var busy []string
	for deadline := time.Now().Add(20 * time.Second); len(busy) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bench started %d busy processes in 20s, want 2", len(busy))
		}
		busy = busyChildren(cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // killed
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var spinning []string
		for _, dir := range busy {
			if b, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil && !zombie(string(b)) {
				spinning = append(spinning, dir)
			}
		}
		if len(spinning) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("busy processes still running 5s after the bench was killed: %v", spinning)
		}
	}
}

// zombie reports whether a /proc/PID/stat line is a process that has
// exited and waits to be reaped.
func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(stat[i+1:], " Z")
}

// busyChildren lists the children of the process parent that run the busy
// loop, as their /proc directories.
func busyChildren(parent int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	var left []string
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil || !strings.Contains(string(b), "\nPPid:\t"+strconv.Itoa(parent)+"\n") {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if strings.Contains(string(cmd), "while :") {
			left = append(left, filepath.Dir(st))
		}
	}
	return left
}
