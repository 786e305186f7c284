package bench

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// The database/sql store's scenarios (pgdbstore on pgx's stdlib), on the
// bench's schema beside pgstore's: the same load as "txinbox" (a batch
// handler writing the effects with one statement) and "declarative".

// openDatabaseSQL opens pgdbstore on the bench's schema.
func (be *benchEnv) openDatabaseSQL(cfg *pgxpool.Config) error {
	be.sqlDB = stdlib.OpenDB(*cfg.ConnConfig)
	be.sqlDB.SetMaxOpenConns(int(cfg.MaxConns))
	d, err := pgdbstore.New(be.sqlDB, pgdbstore.Options{Schema: be.schema})
	be.sqlDriver = d
	return err
}

// txinboxDatabaseSQL is txinboxPG on pgdbstore: the batch handler's one
// statement runs with ExecContext (database/sql has no pgstore.Queue), the
// ids as a text array literal.
func (be *benchEnv) txinboxDatabaseSQL(ctx context.Context, dup float64) (*benchResult, error) {
	p, err := txinbox.NewProcessor(be.sqlDriver, txinbox.Config[*sql.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*txinbox.Message) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", textArray(messageIDs(msgs)))
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return be.feedProcessor(ctx, "database/sql", dup, be.o.conns, p.Process)
}

// declarativeDatabaseSQL is declarative on pgdbstore.
func (be *benchEnv) declarativeDatabaseSQL(ctx context.Context, dup float64) (*benchResult, error) {
	eff, err := effect.New(ctx, be.sqlDriver, effect.Spec{Mode: effect.SQL, Statements: []string{benchEffectSQL}})
	if err != nil {
		return nil, err
	}
	cfg := eff.Apply(txinbox.Config[*sql.Tx]{Scope: "bench", MaxBatchSize: be.o.batch,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, "bench")
	p, err := txinbox.NewProcessor(be.sqlDriver, cfg)
	if err != nil {
		return nil, err
	}
	r, err := be.feedProcessor(ctx, "database/sql", dup, be.o.conns, p.Process)
	if r != nil {
		r.Name = "txinbox-declarative"
	}
	return r, err
}

// textArray is a PostgreSQL text array literal of ids (the bench's ids
// need no more quoting than double quotes around each).
func textArray(ids []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(id))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
