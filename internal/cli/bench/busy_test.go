//go:build linux

package bench_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	if left := busyChildren(t); len(left) > 0 {
		t.Errorf("CPU-bound processes left running after the run: %v", left)
	}
}

// busyChildren lists this process's children that run the busy loop.
func busyChildren(t *testing.T) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	var left []string
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil || !strings.Contains(string(b), "\nPPid:\t"+strconv.Itoa(os.Getpid())+"\n") {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if strings.Contains(string(cmd), "while :") {
			left = append(left, filepath.Dir(st))
		}
	}
	return left
}
