package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// execModes are pgx's query exec modes, as a pool's URL names them
// (default_query_exec_mode). exec and simple_protocol describe no
// statement: pgx encodes every parameter as text, its type unknown.
var execModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// modeURL is the test database's URL with the exec mode set as users set
// it, pgx's default if mode is "".
func modeURL(mode string) string {
	url := testdb.URL()
	if mode == "" {
		return url
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "default_query_exec_mode=" + mode
}

// poolInMode opens a pool of at most maxConns connections on the test
// database in the given exec mode ("": pgx's default), with search_path
// schema, closed at cleanup.
func poolInMode(t testing.TB, schema, mode string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(modeURL(mode))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestExecModes: the essential paths (a handler's batch with a duplicate,
// a drift and a dead letter, a queued statement, a declarative effect
// with payloads and headers, a checkpoint, ProcessOffsets, the purge)
// work in every pgx query exec mode, also those that encode the
// parameters as text of unknown type (exec, simple_protocol: what
// PgBouncer users set).
func TestExecModes(t *testing.T) {
	admin := testdb.Require(t)
	for _, mode := range execModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			schema := testdb.NewSchema(t, admin)
			pool := poolInMode(t, schema, mode, 4)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL, body bytea, kind text);
				CREATE TABLE queued (message_id text NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			execModeHandler(t, d)
			execModeEffect(t, d)
			execModeOffsets(t, d)
			execModePurge(t, d)
		})
	}
}

// execModeHandler runs a handler (a statement of its own and a queued
// one, both with arguments) over new messages, a duplicate, a drift and a
// failure, with and without a checkpoint.
func execModeHandler(t *testing.T, d *pgstore.Driver) {
	t.Helper()
	ctx := context.Background()
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "h", MaxAttempts: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if m.ID == "bad" {
				return errors.New("refused")
			}
			if _, err := tx.Exec(ctx, "INSERT INTO effects (scope, message_id, body) VALUES ($1, $2, $3)", "h", m.ID, m.Payload); err != nil {
				return err
			}
			return pgstore.Queue(tx, "INSERT INTO queued SELECT unnest($1::text[])", []string{m.ID})
		}})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id, body string) *txinbox.Message { return &txinbox.Message{ID: id, Payload: []byte(body)} }
	P, D, R, X := txinbox.Processed, txinbox.Duplicate, txinbox.Drift, txinbox.DeadLettered
	if got, want := outcomes(t, p, msg("a", "A"), msg("b", "B"), msg("bad", "?")), []txinbox.Outcome{P, P, X}; !slices.Equal(got, want) {
		t.Errorf("first batch: %v, want %v", got, want)
	}
	if got, want := outcomes(t, p, msg("a", "A"), msg("b", "other"), msg("c", "C")), []txinbox.Outcome{D, R, P}; !slices.Equal(got, want) {
		t.Errorf("second batch: %v, want %v", got, want)
	}
	res, err := p.ProcessCheckpoint(ctx, []*txinbox.Message{msg("d", "D")}, txinbox.Checkpoint{Source: "t", Partition: 3, Positions: []int64{9}})
	if err != nil || res[0].Outcome != P {
		t.Fatalf("with a checkpoint: %v, %v", res, err)
	}
	if cps, err := p.Checkpoints(ctx, "t"); err != nil || cps[3] != 9 {
		t.Errorf("checkpoints %v, %v; want partition 3 at 9", cps, err)
	}
	if n := count(t, d, "SELECT count(*) FROM queued"); n != 4 {
		t.Errorf("%d queued statements committed, want 4 (a, b, c, d)", n)
	}
	if n := count(t, d, "SELECT count(*) FROM effects WHERE scope = 'h' AND body IS NOT NULL"); n != 4 {
		t.Errorf("%d handler effects, want 4", n)
	}
}

// execModeEffect runs a declarative effect that reads the payloads and
// the headers.
func execModeEffect(t *testing.T, d *pgstore.Driver) {
	t.Helper()
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "e", MaxAttempts: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{
			Statements: []string{`INSERT INTO effects SELECT scope, message_id, payload, headers->0->>'value' FROM new_messages`},
			Headers: func(m *txinbox.Message) (string, error) {
				b, err := json.Marshal([]map[string]string{{"key": "kind", "value": m.Headers[0].Value}})
				return string(b), err
			}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id string) *txinbox.Message {
		return &txinbox.Message{ID: id, Payload: []byte{0, '\\', '"', byte(len(id))}, Headers: []txinbox.Header{{Key: "kind", Value: `in"v\o'ice`}}}
	}
	P, D := txinbox.Processed, txinbox.Duplicate
	if got, want := outcomes(t, p, msg("x"), msg("y")), []txinbox.Outcome{P, P}; !slices.Equal(got, want) {
		t.Errorf("effect batch: %v, want %v", got, want)
	}
	if got, want := outcomes(t, p, msg("x"), msg("z")), []txinbox.Outcome{D, P}; !slices.Equal(got, want) {
		t.Errorf("effect batch with a duplicate: %v, want %v", got, want)
	}
	if n := count(t, d, `SELECT count(*) FROM effects WHERE scope = 'e' AND body = '\x005c2201'::bytea AND kind = $1`, `in"v\o'ice`); n != 3 {
		t.Errorf("%d declarative effects with their payload and header, want 3", n)
	}
}

// execModeOffsets runs ProcessOffsets twice over the same partition: the
// second run's first message is at or below the saved offset.
func execModeOffsets(t *testing.T, d *pgstore.Driver) {
	t.Helper()
	ctx := context.Background()
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "o",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			return pgstore.Queue(tx, "INSERT INTO queued SELECT unnest($1::text[])", ids)
		}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*txinbox.Message{{ID: "o1", Payload: []byte("1")}, {ID: "o2", Payload: []byte("2")}}
	oc := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "k", Partition: 1, Positions: []int64{10, 11}}, Saved: -1}
	_, saved, err := p.ProcessOffsets(ctx, msgs, oc)
	if err != nil || saved != 11 {
		t.Fatalf("ProcessOffsets: saved %d, %v; want 11", saved, err)
	}
	msgs = append(msgs[1:], &txinbox.Message{ID: "o3", Payload: []byte("3")})
	oc.Positions, oc.Saved = []int64{11, 12}, saved
	res, saved, err := p.ProcessOffsets(ctx, msgs, oc)
	if err != nil || saved != 12 || res[0].Outcome != txinbox.Duplicate || res[1].Outcome != txinbox.Processed {
		t.Fatalf("ProcessOffsets again: %v, saved %d, %v; want a duplicate, then processed at 12", res, saved, err)
	}
	if n := count(t, d, "SELECT count(*) FROM queued WHERE message_id LIKE 'o%'"); n != 3 {
		t.Errorf("%d offsets effects, want 3", n)
	}
}

// execModePurge purges everything: the dry run counts it, the purge
// removes it.
func execModePurge(t *testing.T, d *pgstore.Driver) {
	t.Helper()
	ctx := context.Background()
	req := store.PurgeRequest{Scope: "h", Before: time.Now().Add(time.Hour), Limit: 100, DryRun: true}
	dry, err := d.PurgeBatch(ctx, req)
	if err != nil || dry.Inbox != 4 || dry.Drift != 1 {
		t.Fatalf("purge dry run: %+v, %v; want 4 inbox rows and 1 drift", dry, err)
	}
	req.DryRun = false
	got, err := d.PurgeBatch(ctx, req)
	if err != nil || got != dry {
		t.Fatalf("purge: %+v, %v; want %+v", got, err, dry)
	}
	if n := count(t, d, "SELECT count(*) FROM {inbox} WHERE scope = $1", "h"); n != 0 {
		t.Errorf("%d inbox rows of scope h left after the purge", n)
	}
}
