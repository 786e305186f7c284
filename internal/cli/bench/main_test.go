package bench_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestMain builds the txinbox binary that some tests run (clitest.Bin).
func TestMain(m *testing.M) { os.Exit(clitest.BuildAndRun(m)) }

var run = clitest.Run

// benchJSON runs txinbox bench --db (the test database) --json with args,
// fails the test unless it exits 0, reads the report into rep and returns
// it as printed.
func benchJSON(t *testing.T, rep any, args ...string) string {
	t.Helper()
	out, errs, code := run(t, append([]string{"bench", "--db", testdb.URL(), "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	return out
}
