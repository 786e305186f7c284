package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestCrossBuild: the binary builds for the other platforms people run it
// on (main.go must not call Unix-only functions such as syscall.Kill).
// A cold cross-build compiles every dependency again: skipped in -short.
func TestCrossBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a cold cross-build takes minutes")
	}
	for _, goos := range []string{"windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=%s go build ./cmd/txinbox: %v\n%s", goos, err, out)
			}
		})
	}
}
