package pgdbstore_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// TestReadOnlyGuard, on a pool of one connection (so that every batch
// and every check runs on the same session): a handler that runs COMMIT
// as SQL, then writes, gets SQLSTATE 25006 for the write (nothing
// autocommits) while its reads still work; its message fails alone; the
// connection goes back read-write (the next batch, on it, commits), also
// after a batch that a handler's error rolled back. With the guard off,
// the same write autocommits (the limitation the guard closes).
func TestReadOnlyGuard(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "Guarded", true: "NoReadOnlyGuard"}[off], func(t *testing.T) {
			ctx := context.Background()
			schema := testdb.NewSchema(t, testdb.Require(t))
			db := pgdbtest.Open(t, "pgx", schema, 1)
			if _, err := db.Exec("CREATE TABLE effects (id text NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			d, err := pgdbstore.New(db, pgdbstore.Options{Schema: schema, NoReadOnlyGuard: off})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			var writeErr, readErr error
			p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
					switch m.ID {
					case "ends":
						_, _ = tx.ExecContext(ctx, "COMMIT")
						_, writeErr = tx.ExecContext(ctx, "INSERT INTO effects VALUES ('after-commit')")
						var n int
						readErr = tx.QueryRowContext(ctx, "SELECT count(*) FROM effects").Scan(&n)
						return nil
					case "fails":
						return errors.New("refused")
					}
					_, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES ($1)", m.ID)
					return err
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			res, err := p.Process(ctx, []*txinbox.Message{{ID: "a"}, {ID: "ends"}, {ID: "b"}})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != txinbox.Processed || res[1].Outcome == txinbox.Processed || res[2].Outcome != txinbox.Processed {
				t.Errorf("outcomes %v %v %v, want processed, failed, processed", res[0].Outcome, res[1].Outcome, res[2].Outcome)
			}
			if readErr != nil {
				t.Errorf("the handler's read after its COMMIT: %v", readErr)
			}
			var pe *pgconn.PgError
			if guarded := errors.As(writeErr, &pe) && pe.Code == "25006"; guarded == off {
				t.Errorf("the handler's write after its COMMIT: %v (guard off: %v)", writeErr, off)
			}
			if _, err := p.Process(ctx, []*txinbox.Message{{ID: "fails"}}); err != nil {
				t.Fatal(err)
			}
			if res, err := p.Process(ctx, []*txinbox.Message{{ID: "c"}}); err != nil || res[0].Outcome != txinbox.Processed {
				t.Fatalf("the next batch on the same connection: %v %v", res, err)
			}
			var ro string
			var after int
			if err := db.QueryRow("SELECT current_setting('default_transaction_read_only'), "+
				"(SELECT count(*) FROM effects WHERE id = 'after-commit')").Scan(&ro, &after); err != nil {
				t.Fatal(err)
			}
			if ro != "off" {
				t.Errorf("the pooled connection's default_transaction_read_only = %s after the batches, want off", ro)
			}
			if want := map[bool]int{false: 0, true: 1}[off]; after != want {
				t.Errorf("%d rows written after the handler's COMMIT, want %d", after, want)
			}
			if _, err := db.Exec("INSERT INTO effects VALUES ('app')"); err != nil {
				t.Errorf("the application's own write on the pooled connection: %v", err)
			}
		})
	}
}
