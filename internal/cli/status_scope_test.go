package cli_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
)

// TestStatusUnknownScope: --scope naming a scope without rows still
// prints the (empty) status and exits 0, and says on stderr that the
// scope has no rows and which scopes have.
func TestStatusUnknownScope(t *testing.T) {
	db, d := migratedSQLite(t)
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "as4",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Process(context.Background(), []*txinbox.Message{{ID: "m"}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, args := range [][]string{{}, {"--json"}} {
		out, errs, code := run(t, append([]string{"status", "--db", db, "--scope", "nope"}, args...)...)
		if code != 0 || out == "" || !strings.Contains(errs, `scope "nope" has no rows (scopes with rows: as4)`) {
			t.Errorf("status --scope nope %v: exit %d, stdout %q, stderr %q; want 0, the status and a note", args, code, out, errs)
		}
	}
	if _, errs, code := run(t, "status", "--db", db, "--scope", "as4"); code != 0 || errs != "" {
		t.Errorf("status --scope as4: exit %d, stderr %q; want 0 and no note", code, errs)
	}
}
