package serve_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSetBasedEffectNeedsPostgres: a --effect-sql statement that
// reads new_messages runs in the claim's statement, which only an
// unpartitioned PostgreSQL inbox, MySQL and MariaDB make; elsewhere
// (SQLite) serve refuses it at start, naming the database.
func TestServeSetBasedEffectNeedsPostgres(t *testing.T) {
	db := filepath.Join(t.TempDir(), "inbox.db")
	_, errs, code := run(t, "serve", "--db", db, "--kafka-brokers", "127.0.0.1:1", "--kafka-topics", "t", "--kafka-group", "g",
		"--effect", "sql", "--effect-sql", "INSERT INTO invoices SELECT message_id FROM new_messages")
	if code != 2 || !strings.Contains(errs, "need PostgreSQL with an unpartitioned inbox, MySQL or MariaDB") {
		t.Errorf("serve: exit %d, %q", code, errs)
	}
}
