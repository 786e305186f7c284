package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clitest"
)

// TestServeBinarySIGTERMDuringStartup: a SIGTERM while serve checks the
// retention (the SQS endpoint never answers) stops it with exit 0 and a
// plain "stopped during start-up", not the check's "context canceled".
func TestServeBinarySIGTERMDuringStartup(t *testing.T) {
	t.Parallel()
	asked, stop := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handlers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Bin(), "serve", "--db", filepath.Join(t.TempDir(), "inbox.db"), "--no-purge",
		"--sqs-queue-url", hang.URL+"/000000000000/orders", "--sqs-endpoint", hang.URL, "--sqs-region", "us-east-1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") && !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatalf("serve never asked SQS for the queue's retention:\n%s", stderr.String())
	}
	wantStoppedDuringStartup(t, cmd, &stderr, "txinbox serve", "during the retention check")
}

// wantStoppedDuringStartup sends cmd (the binary, starting up) SIGTERM and
// checks that it exits 0 with a plain "NAME: stopped during start-up" and
// no "context canceled"; when says what it was doing, for the error.
func wantStoppedDuringStartup(t *testing.T, cmd *exec.Cmd, stderr *syncBuffer, name, when string) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	errs := stderr.String()
	if code != 0 || !strings.Contains(errs, name+": stopped during start-up") || strings.Contains(errs, "context canceled") {
		t.Errorf("SIGTERM %s: exit %d, stderr:\n%s\nwant exit 0 and a plain stopped during start-up", when, code, errs)
	}
}
