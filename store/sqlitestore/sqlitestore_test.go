package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/sqlharness"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
	"github.com/txinbox/txinbox/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.RunChild(harness)
	goleak.VerifyTestMain(m)
}

func open(ctx context.Context, path string) (*sqlitestore.Driver, error) {
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS effects (scope TEXT NOT NULL, message_id TEXT NOT NULL)"); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

var harness = sqlharness.Fill(storetest.Harness[*sql.Tx]{
	Name: "sqlitestore",
	New: func(t *testing.T) (store.Driver[*sql.Tx], string) {
		path := filepath.Join(t.TempDir(), "inbox.db")
		d, err := open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := d.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return d, path
	},
	Open: func(ctx context.Context, path string) (store.Driver[*sql.Tx], func(), error) {
		d, err := open(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	},
	SlowQuery: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
}, sqlharness.Dialect{Param: sqlharness.Question, Key: "scope || '/' || message_id"})

func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}
