// Package sqlitetest opens the migrated SQLite inbox that many tests
// start from.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/txinbox/txinbox/store/sqlitestore"
)

// Open opens a SQLite inbox in a file of t's temporary directory and
// migrates it; the test's cleanup closes it.
func Open(t testing.TB) *sqlitestore.Driver {
	t.Helper()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}
