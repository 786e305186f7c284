package pgstore_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestQueue: statements a handler queues commit with the batch, once per
// new message; one that fails fails its own message alone (the others of
// the batch take effect once), for a batch handler and for a handler of
// one message; the checkpoint commits with them; and Queue refuses a
// transaction that is not the running handler's.
func TestQueue(t *testing.T) {
	// The refusal is not of a class the driver calls refused (store.Refuser):
	// no split of the batch finds the culprit, the queued statements'
	// errors alone must.
	d, ctx := driverWithEffects(t, `CREATE FUNCTION refuse(id text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
	IF id LIKE 'poison%' THEN RAISE EXCEPTION 'poison %', id USING ERRCODE = '42000'; END IF;
	RETURN true;
END $$;
CREATE TABLE effects (message_id text NOT NULL CHECK (refuse(message_id)))`)
	const insert = "INSERT INTO effects SELECT unnest($1::text[])"
	var kept pgx.Tx
	batch := func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		kept = tx
		return pgstore.Queue(tx, insert, ids)
	}
	one := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		return pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", m.ID)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pb, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", MaxAttempts: 1, Logger: logger, BatchHandler: batch})
	if err != nil {
		t.Fatal(err)
	}
	po, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", MaxAttempts: 1, Logger: logger, Handler: one})
	if err != nil {
		t.Fatal(err)
	}
	m := func(ids ...string) []*txinbox.Message {
		var msgs []*txinbox.Message
		for _, id := range ids {
			msgs = append(msgs, &txinbox.Message{ID: id, Payload: []byte(id)})
		}
		return msgs
	}
	P, D, X := txinbox.Processed, txinbox.Duplicate, txinbox.DeadLettered
	for _, c := range []struct {
		p    *txinbox.Processor[pgx.Tx]
		ids  []string
		want []txinbox.Outcome
	}{
		{pb, []string{"a", "b", "poison1", "c"}, []txinbox.Outcome{P, P, X, P}},
		{pb, []string{"a", "d"}, []txinbox.Outcome{D, P}},
		{po, []string{"e", "poison2", "f", "a"}, []txinbox.Outcome{P, X, P, D}},
	} {
		if got := outcomes(t, c.p, m(c.ids...)...); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.ids, got, c.want)
		}
	}
	res, err := pb.ProcessCheckpoint(ctx, m("g", "h"), txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{7, 8}})
	if err != nil || res[1].Outcome != P {
		t.Fatalf("with a checkpoint: %v, %v", res, err)
	}
	if cps, err := pb.Checkpoints(ctx, "t"); err != nil || cps[0] != 8 {
		t.Errorf("checkpoints %v, %v; want partition 0 at 8", cps, err)
	}
	// Offsets as the inbox: the prefix before the failing statement's
	// message commits, with the checkpoint; it is a Retry, dead-lettered
	// after its attempts, and the checkpoint then moves past it.
	ocp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "o", Partition: 0, Positions: []int64{1, 2, 3}}, Saved: -1}
	ores, saved, err := pb.ProcessOffsets(ctx, m("o1", "poison3", "o3"), ocp)
	if err != nil || ores[0].Outcome != P || ores[1].Outcome != X || saved < 2 {
		t.Fatalf("offsets: %v, saved %d, %v", ores, saved, err)
	}
	rows, _ := d.Pool().Query(ctx, "SELECT message_id FROM effects ORDER BY 1")
	effects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(effects, " "); got != "a b c d e f g h o1 o3" {
		t.Errorf("effects %q, want one per processed message", got)
	}
	if err := pgstore.Queue(kept, insert, []string{"late"}); err == nil {
		t.Error("Queue on a batch transaction that ended: no error")
	}
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // test cleanup
	if err := pgstore.Queue(tx, insert, []string{"x"}); err == nil {
		t.Error("Queue on a transaction of the caller's own: no error")
	}
}

// TestKeptHandlerTxRefused: a handler that keeps its transaction and uses
// it after its batch ended gets an error, even when the connection now
// serves another batch (a pool of one): nothing it runs or queues lands in
// that batch.
func TestKeptHandlerTxRefused(t *testing.T) {
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, 1)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (message_id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var kept pgx.Tx
	var keptExec, keptQueue error
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if kept == nil {
				kept = tx
			} else {
				_, keptExec = kept.Exec(ctx, "INSERT INTO effects VALUES ('stray')")
				keptQueue = pgstore.Queue(kept, "INSERT INTO effects VALUES ('stray')")
			}
			return pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", m.ID)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if got := outcomes(t, p, &txinbox.Message{ID: id, Payload: []byte(id)}); got[0] != txinbox.Processed {
			t.Fatalf("%s: %v", id, got)
		}
	}
	if keptExec == nil || keptQueue == nil {
		t.Errorf("the ended batch's transaction, used in the next batch: Exec %v, Queue %v; want errors", keptExec, keptQueue)
	}
	if n := count(t, d, "SELECT count(*) FROM effects WHERE message_id = 'stray'"); n != 0 {
		t.Errorf("%d stray effects committed by the next batch", n)
	}
}
