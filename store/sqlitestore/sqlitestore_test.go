package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

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

var harness = storetest.Harness[*sql.Tx]{
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
	InsertEffect: func(ctx context.Context, tx *sql.Tx, scope, id string) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO effects (scope, message_id) VALUES (?, ?)", scope, id)
		return err
	},
	Effects: func(t *testing.T, d store.Driver[*sql.Tx]) map[string]int {
		rows, err := d.(*sqlitestore.Driver).DB().Query("SELECT scope || '/' || message_id, count(*) FROM effects GROUP BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			out[k] = n
		}
		return out
	},
	Exec: func(ctx context.Context, tx *sql.Tx, query string) error {
		_, err := tx.ExecContext(ctx, query)
		return err
	},
	Commit:    func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
	Rollback:  func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
	SlowQuery: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
	InboxPayloadHash: func(t *testing.T, d store.Driver[*sql.Tx], scope, id string) []byte {
		sd := d.(*sqlitestore.Driver)
		var h []byte
		err := sd.DB().QueryRow(sd.Tables().Expand("SELECT payload_hash FROM {inbox} WHERE scope = ? AND message_id = ?"), scope, id).Scan(&h)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return h
	},
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}
