package pgdbstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/pgstore"
)

// BenchmarkStores compares pgdbstore (database/sql on pgx's stdlib) with
// pgstore on the same load, in one run: batches of 100 messages, a batch
// handler writing the effects with one statement, or the same effect
// declared (Config.Effect), at 0% and 30% duplicates. msgs/s is the
// figure; compare ratios within one run (docs/benchmarks.md).
//
//	go test ./store/pgdbstore -run '^$' -bench Stores -benchtime 300x
func BenchmarkStores(b *testing.B) {
	const effect = "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, dups := range []int{0, 30} {
		for _, path := range []string{"batch", "declarative"} {
			b.Run(fmt.Sprintf("pgstore/%s/dups=%d", path, dups), func(b *testing.B) {
				schema := benchSchema(b)
				d, err := pgstore.New(testdb.PoolIn(b, schema, 4), pgstore.Options{Schema: schema})
				mustB(b, err, d.Migrate(context.Background()))
				cfg := txinbox.Config[pgx.Tx]{Scope: "bench", Logger: quiet}
				if path == "declarative" {
					cfg.Effect = &txinbox.Effect{Statements: []string{effect}}
				} else {
					cfg.BatchHandler = func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
						_, err := tx.Exec(ctx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", ids(msgs))
						return err
					}
				}
				p, err := txinbox.NewProcessor(d, cfg)
				mustB(b, err)
				runBench(b, p.Process, dups)
			})
			for _, noGuard := range []bool{false, true} {
				if noGuard && path != "batch" {
					continue // no BEGIN on the declarative path: nothing to guard
				}
				benchPgdbstore(b, path, dups, noGuard)
			}
		}
	}
}

// benchPgdbstore is BenchmarkStores' run of pgdbstore, with or without
// the read-only guard (Options.NoReadOnlyGuard).
func benchPgdbstore(b *testing.B, path string, dups int, noGuard bool) {
	const effect = "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	name := "pgdbstore"
	if noGuard {
		name += "-noguard"
	}
	b.Run(fmt.Sprintf("%s/%s/dups=%d", name, path, dups), func(b *testing.B) {
		schema := benchSchema(b)
		d, err := pgdbstore.New(pgdbtest.Open(b, "pgx", schema, 4), pgdbstore.Options{Schema: schema, NoReadOnlyGuard: noGuard})
		mustB(b, err, d.Migrate(context.Background()))
		cfg := txinbox.Config[*sql.Tx]{Scope: "bench", Logger: quiet}
		if path == "declarative" {
			cfg.Effect = &txinbox.Effect{Statements: []string{effect}}
		} else {
			cfg.BatchHandler = func(ctx context.Context, tx *sql.Tx, msgs []*txinbox.Message) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", "{"+joinQuoted(ids(msgs))+"}")
				return err
			}
		}
		p, err := txinbox.NewProcessor(d, cfg)
		mustB(b, err)
		runBench(b, p.Process, dups)
	})
}

func benchSchema(b *testing.B) string {
	schema := testdb.NewSchema(b, testdb.Require(b))
	_, err := testdb.PoolIn(b, schema, 1).Exec(context.Background(), "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)")
	mustB(b, err)
	return schema
}

func mustB(b *testing.B, errs ...error) {
	b.Helper()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func ids(msgs []*txinbox.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

func joinQuoted(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += `"` + v + `"`
	}
	return out
}

// runBench processes b.N batches of 100, dups percent of each batch ids
// of the batch before.
func runBench(b *testing.B, process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error), dups int) {
	ctx := context.Background()
	next := 0
	b.ResetTimer()
	for range b.N {
		msgs := make([]*txinbox.Message, 0, 100)
		for j := range 100 {
			id := next
			if j < dups && next >= 100 {
				id = next - 100 + j // a redelivery of the batch before
			} else {
				next++
			}
			msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("m-", id), Payload: []byte("payload")})
		}
		if _, err := process(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
