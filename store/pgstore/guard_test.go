package pgstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func guardedDriver(t *testing.T) (*pgstore.Driver, context.Context) {
	t.Helper()
	return driverWithEffects(t, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)")
}

// driverWithEffects migrates a driver on a schema of its own with the
// effects table that ddl creates.
func driverWithEffects(t *testing.T, ddl string) (*pgstore.Driver, context.Context) {
	t.Helper()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, 4)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d, ctx
}

// commitsThroughConn is a processor whose handler inserts each message's
// effect and, for the message "bad", sends COMMIT through the
// transaction's Conn, past the guarded pgx.Tx; the error of that COMMIT
// is stored where the second result points.
func commitsThroughConn(t *testing.T, d *pgstore.Driver) (*txinbox.Processor[pgx.Tx], *error) {
	t.Helper()
	commitErr := new(error)
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if _, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1, $2)", m.Scope, m.ID); err != nil {
				return err
			}
			if m.ID == "bad" {
				_, *commitErr = tx.Conn().Exec(ctx, "COMMIT")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return p, commitErr
}

// TestCommitGuardRefusesCommitThroughConn: a COMMIT sent past the guarded
// pgx.Tx, through its Conn, is refused by the commit guard's trigger and
// rolls the whole batch back; the culprit fails alone.
func TestCommitGuardRefusesCommitThroughConn(t *testing.T) {
	d, ctx := guardedDriver(t)
	p, commitErr := commitsThroughConn(t, d)
	res, err := p.Process(ctx, []*txinbox.Message{{ID: "a"}, {ID: "bad"}, {ID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != txinbox.Processed || res[1].Outcome != txinbox.Retry || res[2].Outcome != txinbox.Processed {
		t.Fatalf("results = %+v", res)
	}
	var pe interface{ SQLState() string }
	if !errors.As(*commitErr, &pe) || pe.SQLState() != "2D000" || !strings.Contains((*commitErr).Error(), "only be committed by the processor") {
		t.Errorf("the handler's COMMIT returned %v, want the guard's refusal", *commitErr)
	}
	var effects, bad int
	if err := d.Pool().QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE message_id = 'bad') FROM effects").Scan(&effects, &bad); err != nil {
		t.Fatal(err)
	}
	if effects != 2 || bad != 0 {
		t.Errorf("effects = %d (bad %d), want 2 (0)", effects, bad)
	}
}

// TestCommitGuardRowsPurged: the guard's row of a backend that is gone is
// removed by the purge.
func TestCommitGuardRowsPurged(t *testing.T) {
	d, ctx := guardedDriver(t)
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s",
		Handler: func(context.Context, pgx.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		if err := d.Pool().QueryRow(ctx, d.Tables().Expand("SELECT count(*) FROM {tx_guard}")).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count() != 1 {
		t.Fatalf("guard rows = %d, want 1", count())
	}
	// A row of a backend that does not exist; only a commit that says it
	// is the processor's may write it.
	if _, err := d.Pool().Exec(ctx, d.Tables().Expand("INSERT INTO {tx_guard} (backend_pid) VALUES (-1)")); err == nil {
		t.Fatal("a guard row written outside the processor's commit was accepted")
	}
	if err := pgx.BeginFunc(ctx, d.Pool(), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, d.Tables().Expand("SELECT set_config('txinbox.commit', 'on', true); INSERT INTO {tx_guard} (backend_pid) VALUES (-1)"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PurgeBatch(ctx, store.PurgeRequest{Before: time.Now().Add(-time.Hour), Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("guard rows after the purge = %d, want 1 (the live backend's)", n)
	}
}

// TestRefusedAtCommitSplitsTheBatch: a handler's deferred constraint that
// fails at COMMIT refuses the whole batch with no message to blame; the
// batch is split until the message at fault fails alone.
func TestRefusedAtCommitSplitsTheBatch(t *testing.T) {
	d, ctx := guardedDriver(t)
	if _, err := d.Pool().Exec(ctx, `CREATE TABLE parents (id text PRIMARY KEY);
CREATE TABLE children (parent text REFERENCES parents DEFERRABLE INITIALLY DEFERRED, id text)`); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", MaxAttempts: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			for _, m := range msgs {
				parent := "p"
				if m.ID == "orphan" {
					parent = "missing"
				}
				if _, err := tx.Exec(ctx, "INSERT INTO children VALUES ($1, $2)", parent, m.ID); err != nil {
					return err
				}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool().Exec(ctx, "INSERT INTO parents VALUES ('p')"); err != nil {
		t.Fatal(err)
	}
	batch := func() []*txinbox.Message {
		var ms []*txinbox.Message
		for _, id := range []string{"a", "b", "c", "orphan", "e", "f", "g"} {
			ms = append(ms, &txinbox.Message{ID: id, Payload: []byte(id)})
		}
		return ms
	}
	for round, want := range []txinbox.Outcome{txinbox.Retry, txinbox.DeadLettered} {
		res, err := p.Process(ctx, batch())
		if err != nil {
			t.Fatalf("round %d: Process: %v (the orphan must fail alone)", round, err)
		}
		for i, r := range res {
			w := txinbox.Processed
			if round > 0 {
				w = txinbox.Duplicate
			}
			if i == 3 {
				w = want
			}
			if r.Outcome != w {
				t.Errorf("round %d: result[%d] = %v (%v), want %v", round, i, r.Outcome, r.Err, w)
			}
		}
		if !strings.Contains(res[3].Err.Error(), "23503") {
			t.Errorf("round %d: the orphan's error %v does not name the refusal", round, res[3].Err)
		}
	}
	var n int
	if err := d.Pool().QueryRow(ctx, "SELECT count(*) FROM children").Scan(&n); err != nil || n != 6 {
		t.Errorf("children = %d, %v; want 6", n, err)
	}
}

// TestCommitGuardWithCheckpoint: in a batch that moves a checkpoint
// (offsets as the inbox, or a claim that saves the batch's watermark in
// its statement), a handler's COMMIT through its Conn is refused as in a
// plain batch: nothing of its batch commits, and the watermark stops
// before it.
func TestCommitGuardWithCheckpoint(t *testing.T) {
	for _, mode := range []string{"offsets", "checkpoint"} {
		t.Run(mode, func(t *testing.T) {
			d, ctx := guardedDriver(t)
			p, commitErr := commitsThroughConn(t, d)
			msgs := []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "b", Payload: []byte("2")},
				{ID: "bad", Payload: []byte("3")}, {ID: "d", Payload: []byte("4")}}
			pos := []int64{10, 11, 12, 13}
			var (
				res []txinbox.Result
				err error
			)
			if mode == "offsets" {
				res, _, err = p.ProcessOffsets(ctx, msgs, txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "t", Partition: 0, Positions: pos}, Saved: -1})
			} else {
				res, err = p.ProcessCheckpoint(ctx, msgs, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: pos})
			}
			if err != nil {
				t.Fatal(err)
			}
			if res[2].Outcome != txinbox.Retry {
				t.Fatalf("results = %+v, want the culprit to retry", res)
			}
			var pe interface{ SQLState() string }
			if !errors.As(*commitErr, &pe) || pe.SQLState() != "2D000" || !strings.Contains((*commitErr).Error(), "only be committed by the processor") {
				t.Errorf("the handler's COMMIT returned %v, want the guard's refusal", *commitErr)
			}
			var bad int
			if err := d.Pool().QueryRow(ctx, "SELECT count(*) FROM effects WHERE message_id = 'bad'").Scan(&bad); err != nil {
				t.Fatal(err)
			}
			if bad != 0 {
				t.Errorf("the culprit's effect committed %d times, want 0", bad)
			}
			cps, err := p.Checkpoints(ctx, "t")
			if err != nil || cps[0] != 11 {
				t.Errorf("checkpoint %v, %v; want 11 (before the culprit)", cps, err)
			}
		})
	}
}

// TestExecTypedGuarded: a statement run with ExecTyped (package effect's
// per-message statements) in a handler's transaction is guarded like the
// handler's own: after the handler ended the transaction with ROLLBACK as
// SQL, it is refused rather than run in autocommit, and the message fails
// alone while its neighbours commit.
func TestExecTypedGuarded(t *testing.T) {
	d, ctx := guardedDriver(t)
	var typedErr error
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if m.ID == "bad" {
				if _, err := tx.Exec(ctx, "ROLLBACK"); err != nil {
					return err
				}
				typedErr = d.ExecTyped(ctx, tx, "INSERT INTO effects VALUES ($1, $2)", m.Scope, "after-"+m.ID)
				return nil
			}
			return d.ExecTyped(ctx, tx, "INSERT INTO effects VALUES ($1, $2)", m.Scope, m.ID)
		}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Process(ctx, []*txinbox.Message{{ID: "a"}, {ID: "bad"}, {ID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != txinbox.Processed || res[1].Outcome != txinbox.Retry || res[2].Outcome != txinbox.Processed {
		t.Fatalf("results = %+v", res)
	}
	if typedErr == nil || !strings.Contains(typedErr.Error(), "has ended") {
		t.Errorf("ExecTyped after the handler's ROLLBACK = %v, want the ended transaction's refusal", typedErr)
	}
	var rows []string
	r, _ := d.Pool().Query(ctx, "SELECT message_id FROM effects ORDER BY message_id")
	if rows, err = pgx.CollectRows(r, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows, " ") != "a c" {
		t.Errorf("effects = %v, want a c (nothing of bad, nothing in autocommit)", rows)
	}
}
