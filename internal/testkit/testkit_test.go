package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferConcurrent: writes from many goroutines all land, whole,
// while another reads (run with -race).
func TestSyncBufferConcurrent(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "g%d-%d\n", g, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != 800 {
		t.Errorf("%d distinct lines, want 800 (a write was torn or lost)", len(seen))
	}
}
