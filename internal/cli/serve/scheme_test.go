package serve_test

import (
	"os"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clitest"
)

// TestUnservedSchemeRefused: every command that opens --db refuses a URL
// whose scheme txinbox does not serve, naming the scheme, through the
// binary as a user runs it; none opens it as a SQLite file of that name
// (which failed with "unable to open database file", or created one).
func TestUnservedSchemeRefused(t *testing.T) {
	// The commands read TXINBOX_<FLAG> from the environment, which a
	// developer's shell may set (TXINBOX_DB, TXINBOX_AMQP_URL: serve takes
	// that for --amqp-url and then wants --amqp-queue; the test servers'
	// variables are TXINBOX_TEST_*, which no flag reads): run them on the
	// flags given here only.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TXINBOX_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	for _, url := range []string{"sqlserver://sa:secret@127.0.0.1:1433/inbox", "postgress://u@127.0.0.1/x", "Oracle://u@h/x"} {
		scheme, _, _ := strings.Cut(url, "://")
		for _, args := range [][]string{
			{"migrate"}, {"status"}, {"dlq", "list"}, {"drift", "list"}, {"purge", "--dry-run"}, {"inspect", "--scope", "s", "k"},
			{"relay", "--target", "http", "--http-url", "http://127.0.0.1:1/x", "--once"},
			{"serve", "--as4-listen", "127.0.0.1:0"}, {"demo", "--messages", "10"}, {"bench", "--duration", "1s"},
		} {
			args = append(args, "--db", url)
			_, errs, code := runIn(t, dir, args...)
			if code == 0 || !strings.Contains(errs, `does not serve the scheme "`+scheme+`"`) ||
				strings.Contains(errs, "unable to open") || strings.Contains(errs, "secret") {
				t.Errorf("txinbox %v: exit %d, stderr %q; want the scheme %q refused by name", args, code, errs, scheme)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the commands left %v in their working directory (a file named after the URL?)", entries)
	}
}

// runIn runs the binary in dir.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	t.Chdir(dir)
	return clitest.RunBin(t, args...)
}
