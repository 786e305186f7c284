package serve_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestServeRefusesSynchronousCommitOff: on a database whose default is
// synchronous_commit=off, serve refuses to start, naming the setting,
// what a crash loses and the fix; accepted in the YAML file
// (accept_durability_risk), it starts and names the risk in /readyz
// (ready all the same), in txinbox_durability_risk and on the console.
func TestServeRefusesSynchronousCommitOff(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	db := testdb.NewDatabase(t, admin)
	if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+db+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	url := testdb.WithDatabase(t, testdb.URL(), db)
	args := []string{"serve", "--db", url, "--as4-listen", "127.0.0.1:0", "--no-purge"}
	// Bounded: a serve that does not refuse runs until the deadline.
	refusal, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	var errb syncBuffer
	code := cli.Main(refusal, &clikit.Env{Stdout: io.Discard, Stderr: &errb, Stdin: strings.NewReader(""),
		Getenv: func(string) string { return "" }}, args)
	errs := errb.String()
	for _, want := range []string{"the database can lose messages txinbox acknowledged",
		"synchronous_commit=off: a commit returns before its WAL is on disk", "ALTER ROLE <txinbox's role> SET synchronous_commit = on",
		"a crash: a crash of PostgreSQL or of its machine loses the commits of the last 600ms",
		"accept the risk with --accept-durability-risk (YAML accept_durability_risk: true)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
	if code != clikit.ExitUsage || t.Failed() {
		t.Fatalf("exit %d, want %d (refused); stderr:\n%s", code, clikit.ExitUsage, errs)
	}
	config := filepath.Join(t.TempDir(), "txinbox.yaml")
	if err := os.WriteFile(config, []byte("accept_durability_risk: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errBuf := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errBuf, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, append(args, "--http-listen", "127.0.0.1:0", "--config", config))
	}()
	opsURL := awaitReady(t, out, done, errBuf)
	body := get(t, opsURL+"/readyz", http.StatusOK)
	if !strings.Contains(body, `"durability":"accepted risk (--accept-durability-risk (YAML accept_durability_risk: true)): acknowledged messages can be lost: synchronous_commit=off"`) {
		t.Errorf("/readyz: %s", body)
	}
	if body := get(t, opsURL+"/metrics", http.StatusOK); !strings.Contains(body, `txinbox_durability_risk{setting="synchronous_commit",value="off"} 1`) ||
		!strings.Contains(body, "txinbox_durability_risks 1") || !strings.Contains(body, `txinbox_ready_check{check="durability"} 1`) {
		t.Errorf("/metrics lacks the durability risk")
	}
	if body := get(t, opsURL+"/ui/", http.StatusOK); !strings.Contains(body, "<b>synchronous_commit=off</b>: a commit returns before its WAL is on disk") {
		t.Errorf("the console's overview does not name the risk")
	}
	if !strings.Contains(errBuf.String(), "accepted by --accept-durability-risk") {
		t.Errorf("no warning logged: %s", errBuf)
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errBuf)
	}
}

// awaitReady waits for serve's "ready: " line and returns its operations
// URL.
func awaitReady(t *testing.T, out *lineWriter, done chan int, errs *syncBuffer) string {
	t.Helper()
	var opsURL string
	for {
		select {
		case line := <-out.lines:
			if rest, ok := strings.CutPrefix(line, "health and metrics on "); ok {
				opsURL, _, _ = strings.Cut(rest, " ")
			}
			if strings.HasPrefix(line, "ready: ") {
				return opsURL
			}
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not start: %s", errs)
		}
	}
}

// get GETs u and returns its body, failing unless the status is want.
func get(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
