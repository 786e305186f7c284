package demo_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/brokers"
)

func TestDemoSQSSQLite(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 0, "--source", "sqs", "--db", filepath.Join(t.TempDir(), "demo.db"),
		"--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkQueueExactlyOnce(t, r, 600, 6)
}

func TestDemoSQSPostgres(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 0, "--source", "sqs", "--db", demoPostgresURL(t, "txinbox-sqs-demo-test"),
		"--messages", "1000", "--duplicates", "0.3", "--crashes", "3")
	checkQueueExactlyOnce(t, r, 1000, 3)
}

func TestDemoSQSText(t *testing.T) {
	t.Parallel()
	out, errs, code := runBin(t, "demo", "--source", "sqs", "--messages", "200", "--crashes", "3",
		"--db", filepath.Join(t.TempDir(), "demo.db"))
	if code != 0 || !strings.Contains(out, "OK: every invoice was applied exactly once.") || !strings.Contains(out, "SQS fake") {
		t.Fatalf("txinbox demo --source sqs exited %d\n%s\n%s", code, out, errs)
	}
	_, errs, code = runBin(t, "demo", "--source", "sqs", "--sabotage", "ack-first", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code == 0 || !strings.Contains(errs, "not available with --source sqs") {
		t.Errorf("--sabotage ack-first with sqs: exit %d, stderr %q", code, errs)
	}
}

// TestDemoSQSExternalEndpoint: with --sqs-endpoint the demo uses the
// endpoint given, not a txinbox-brokers child of its own.
func TestDemoSQSExternalEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	endpoint, stop, err := brokers.StartSQS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := runDemoJSON(t, 0, "--source", "sqs", "--sqs-endpoint", endpoint, "--db", filepath.Join(t.TempDir(), "demo.db"),
		"--messages", "200", "--duplicates", "0.2", "--crashes", "3")
	checkQueueExactlyOnce(t, r, 200, 3)
	if !strings.Contains(r.Where, "SQS at "+endpoint) {
		t.Errorf("where = %q, want the endpoint given, %s", r.Where, endpoint)
	}
}
