// Package clitest helps the tests of the txinbox command packages: it runs
// the command line in-process (Run) or as the built binary (BuildAndRun,
// RunBin), as a user would.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// Run runs a command in-process, with an empty environment, and returns
// stdout, stderr and the exit code.
func Run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	code := cli.Main(context.Background(), env, args)
	return out.String(), errb.String(), code
}

// bin is the binary built by BuildAndRun.
var bin string

// Bin is the txinbox binary that BuildAndRun built, for the tests that run
// it as a user would: the demo starts its consumers from its own
// executable, so it cannot run inside the test binary.
func Bin() string { return bin }

// BuildAndRun builds txinbox (with -race) and txinbox-brokers once into a
// temporary directory, runs the tests and returns m.Run's status; for
// TestMain. txinbox-brokers lies next to txinbox, where the demos look
// first; the in-process commands (bench) find it through
// TXINBOX_BROKERS_BIN (internal/brokers tests that path).
func BuildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "txinbox-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "txinbox")
	brokersBin := filepath.Join(dir, "txinbox-brokers")
	for _, b := range [][]string{{"-race", "-o", bin, "./cmd/txinbox"}, {"-o", brokersBin, "./cmd/txinbox-brokers"}} {
		build := exec.Command("go", append([]string{"build"}, b...)...)
		build.Dir = moduleRoot()
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", b[len(b)-1]+":", err)
			return 1
		}
	}
	os.Setenv("TXINBOX_BROKERS_BIN", brokersBin)
	return m.Run()
}

// moduleRoot is the repository's root: three levels above this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// RunBin runs the txinbox binary and returns stdout, stderr and the exit code.
func RunBin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	// A hang fails this run with its output instead of the whole binary
	// at go test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("txinbox %v did not finish within 5 minutes\nstdout: %s\nstderr: %s", args, out.String(), errb.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("running txinbox %v: %v", args, err)
	return "", "", 0
}
