package cli

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// txinboxPG feeds the processor from memory: each worker processes batches
// whose effects a batch handler writes with one statement.
func (be *benchEnv) txinboxPG(ctx context.Context, dup float64) (*benchResult, error) {
	p, err := txinbox.NewProcessor(be.driver, txinbox.Config[pgx.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			return benchEffectsHandler(ctx, tx, messageIDs(msgs))
		},
	})
	if err != nil {
		return nil, err
	}
	return be.feedProcessor(ctx, "postgres", dup, be.o.conns, p.Process)
}

func (be *benchEnv) txinboxSQLite(ctx context.Context, dup float64) (*benchResult, error) {
	path, cleanup, err := tempSQLite(be.o.sqlite)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		return nil, err
	}
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE effects (scope TEXT NOT NULL, message_id TEXT NOT NULL)"); err != nil {
		return nil, err
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*txinbox.Message) error {
			stmt, err := tx.PrepareContext(ctx, "INSERT INTO effects VALUES ('bench', ?)")
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, m := range msgs {
				if _, err := stmt.ExecContext(ctx, m.ID); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return be.feedProcessor(ctx, "sqlite", dup, 1, p.Process)
}

func (be *benchEnv) feedProcessor(ctx context.Context, storeName string, dup float64, workers int,
	process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error)) (*benchResult, error) {
	ids := newIDSource(dup, be.o.batch*workers*4)
	return be.measure(ctx, "txinbox", storeName, dup, workers, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 3))
		for ctx.Err() == nil {
			msgs := make([]*txinbox.Message, be.o.batch)
			for i := range msgs {
				id, _ := ids.id(rng)
				msgs[i] = &txinbox.Message{ID: id, Source: "bench", Payload: benchPayload}
			}
			t0 := time.Now()
			// The batch runs to its end when the deadline passes, so it
			// is counted.
			if _, err := process(context.WithoutCancel(ctx), msgs); err != nil {
				return err
			}
			lat.add(time.Since(t0), len(msgs))
			n.Add(int64(len(msgs)))
		}
		return nil
	})
}

func messageIDs(msgs []*txinbox.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}
