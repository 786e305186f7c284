package testkit

import (
	"os"
	"testing"
)

// Getenv returns the test variable name (a TXINBOX_TEST_* name, which no
// txinbox flag reads), else the older name it replaced (old, "" for none:
// tests written before the rename, and environments that still export
// it, keep working), else "".
func Getenv(name, old string) string {
	if v := os.Getenv(name); v != "" || old == "" {
		return v
	}
	return os.Getenv(old)
}

// Unavailable skips t, saying msg, when a server the test needs does not
// answer; it fails t instead when requireEnv (TXINBOX_REQUIRE_DB, say) is
// 1 or CI=true (.ci/run sets both), where a skip would hide a test that
// never ran.
func Unavailable(t testing.TB, requireEnv, msg string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" || os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
