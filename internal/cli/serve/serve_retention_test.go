package serve_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// TestServeAS4RetentionIsChecked: the AS4 scope's own retention is checked
// against the AS4 partners' retry window, even when --retention covers it.
func TestServeAS4RetentionIsChecked(t *testing.T) {
	t.Parallel()
	_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "r.db"), "--as4-listen", "127.0.0.1:0",
		"--retention", "30d", "--as4-retention", "1d")
	if code != clikit.ExitUsage || !strings.Contains(errs, "--as4-retention 1d is shorter than --retry-window 7d of the AS4 partners") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	_, errs, code = run(t, "serve", "--db", filepath.Join(t.TempDir(), "r.db"), "--as4-listen", "127.0.0.1:0", "--as4-retention", "later")
	if code != clikit.ExitUsage || !strings.Contains(errs, `--as4-retention: "later" is not a positive duration`) {
		t.Errorf("bad --as4-retention: exit %d, stderr %q", code, errs)
	}
}
