package pgdbstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestBothStoresShareAnInbox: pgstore (pgx) and pgdbstore (database/sql)
// consume the same ids from one inbox at once, each with several
// workers; every id's effect commits exactly once, whichever store
// claimed it, and every id is in the inbox once.
func TestBothStoresShareAnInbox(t *testing.T) {
	ctx := context.Background()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, 8)
	db := pgdbtest.Open(t, "pgx", schema, 8)
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL, store text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	pd, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	dd, err := pgdbstore.New(db, pgdbstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := pd.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dd.Migrate(ctx); err != nil { // finds nothing left to do
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pp, err := txinbox.NewProcessor(pd, txinbox.Config[pgx.Tx]{Scope: "shared", Logger: quiet,
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1, $2, 'pgstore')", m.Scope, m.ID)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	dp, err := txinbox.NewProcessor(dd, txinbox.Config[*sql.Tx]{Scope: "shared", Logger: quiet,
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES ($1, $2, 'pgdbstore')", m.Scope, m.ID)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()

	const ids, rounds, batch = 400, 30, 40
	process := func(name string, fn func([]*txinbox.Message) ([]txinbox.Result, error), seed uint64) error {
		r := rand.New(rand.NewPCG(seed, 1))
		for range rounds {
			var msgs []*txinbox.Message
			for _, i := range r.Perm(ids)[:batch] {
				msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("m-", i), Payload: []byte(fmt.Sprint("payload ", i))})
			}
			if _, err := fn(msgs); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			errs <- process("pgstore", func(m []*txinbox.Message) ([]txinbox.Result, error) { return pp.Process(ctx, m) }, uint64(w))
		})
		wg.Go(func() {
			errs <- process("pgdbstore", func(m []*txinbox.Message) ([]txinbox.Result, error) { return dp.Process(ctx, m) }, uint64(100+w))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var twice, stores, inbox, distinct int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM effects GROUP BY message_id HAVING count(*) > 1) x),
		(SELECT count(DISTINCT store) FROM effects), (SELECT count(*) FROM `+pd.Tables().Inbox+`),
		(SELECT count(DISTINCT message_id) FROM effects)`).Scan(&twice, &stores, &inbox, &distinct); err != nil {
		t.Fatal(err)
	}
	if twice != 0 || inbox != distinct {
		t.Errorf("%d ids with more than one effect; %d inbox rows for %d ids with an effect", twice, inbox, distinct)
	}
	if stores != 2 {
		t.Errorf("effects written by %d stores, want both", stores)
	}
}
