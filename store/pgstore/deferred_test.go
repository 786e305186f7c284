package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgstore"
)

// roundTrips counts what a pool sends: each statement on its own and each
// batch (a pipeline of statements with one Sync) is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// deferredEnv is a driver whose pool counts round trips, with an effects
// table.
type deferredEnv struct {
	t      *testing.T
	admin  *pgxpool.Pool
	schema string
	ctx    context.Context
	d      *pgstore.Driver
	trips  *roundTrips
}

func newDeferredEnv(t *testing.T) *deferredEnv {
	t.Helper()
	c := newClaimEnv(t)
	e := &deferredEnv{t: t, admin: c.admin, schema: c.schema, ctx: c.ctx, trips: &roundTrips{}}
	// The pool's sessions are named after the schema, for killSessions.
	e.d = c.driver(c.schema, e.trips)
	if _, err := e.d.Pool().Exec(e.ctx, "CREATE TABLE effects (message_id text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *deferredEnv) processor(h txinbox.BatchHandlerFunc[pgx.Tx]) *txinbox.Processor[pgx.Tx] {
	p, err := txinbox.NewProcessor(e.d, txinbox.Config[pgx.Tx]{Scope: "s", BatchHandler: h,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// offsets runs ProcessOffsets over n messages at positions from..from+n-1
// of partition "0", with the checkpoint seen at saved, and returns the
// round trips it took.
func (e *deferredEnv) offsets(p *txinbox.Processor[pgx.Tx], from, n, saved int64) ([]txinbox.Result, int64, error) {
	msgs, pos := make([]*txinbox.Message, n), make([]int64, n)
	for i := range msgs {
		msgs[i] = &txinbox.Message{ID: fmt.Sprint("m", from+int64(i)), Payload: []byte("x")}
		pos[i] = from + int64(i)
	}
	before := e.trips.n.Load()
	res, _, err := p.ProcessOffsets(e.ctx, msgs, txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "t", Partition: 0, Positions: pos}, Saved: saved})
	return res, e.trips.n.Load() - before, err
}

func (e *deferredEnv) effects() int {
	var n int
	if err := e.d.Pool().QueryRow(e.ctx, "SELECT count(*) FROM effects").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func insertIDs(msgs []*txinbox.Message) (string, []string) {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return "INSERT INTO effects SELECT unnest($1::text[])", ids
}

// TestOffsetsOneRoundTrip: with offsets as the inbox and a handler that
// queues its statement, a batch is one round trip (the BEGIN, the
// checkpoint's move, the statement and the COMMIT); a handler that runs
// its statement itself takes three, as before.
func TestOffsetsOneRoundTrip(t *testing.T) {
	e := newDeferredEnv(t)
	queued := e.processor(func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		sql, ids := insertIDs(msgs)
		return pgstore.Queue(tx, sql, ids)
	})
	direct := e.processor(func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		sql, ids := insertIDs(msgs)
		_, err := tx.Exec(ctx, sql, ids)
		return err
	})
	// The first two batches warm up: a statement's first use on a
	// connection prepares it (one round trip more).
	saved := int64(-1)
	for i, c := range []struct {
		p     *txinbox.Processor[pgx.Tx]
		trips int64
	}{{queued, -1}, {direct, -1}, {queued, 1}, {queued, 1}, {direct, 3}, {queued, 1}} {
		res, trips, err := e.offsets(c.p, int64(i*100), 100, saved)
		if err != nil || res[99].Outcome != txinbox.Processed {
			t.Fatalf("batch %d: %v, %v", i, res[99], err)
		}
		if c.trips >= 0 && trips != c.trips {
			t.Errorf("batch %d: %d round trips, want %d", i, trips, c.trips)
		}
		saved = int64(i*100 + 99)
	}
	if n := e.effects(); n != 600 {
		t.Errorf("%d effects, want 600", n)
	}
	cps, err := queued.Checkpoints(e.ctx, "t")
	if err != nil || cps[0] != 599 {
		t.Errorf("checkpoint %v, %v; want 599", cps, err)
	}
}

// TestOffsetsDeferredMoveFindsCheckpointMoved: a consumer whose view of
// the checkpoint is stale (another consumer moved it) gets
// ErrCheckpointMoved and commits nothing, whether its handler queues its
// statement, runs it, or runs it and swallows the error; its handler may
// run (its transaction had not begun).
func TestOffsetsDeferredMoveFindsCheckpointMoved(t *testing.T) {
	e := newDeferredEnv(t)
	queue := func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		sql, ids := insertIDs(msgs)
		return pgstore.Queue(tx, sql, ids)
	}
	if _, _, err := e.offsets(e.processor(queue), 0, 10, -1); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]txinbox.BatchHandlerFunc[pgx.Tx]{
		"queued": queue,
		"exec": func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			sql, ids := insertIDs(msgs)
			_, err := tx.Exec(ctx, sql, ids)
			return err
		},
		"exec, error swallowed": func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			sql, ids := insertIDs(msgs)
			tx.Exec(ctx, sql, ids) //nolint:errcheck // what is tested
			return nil
		},
		"conn": func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			sql, ids := insertIDs(msgs)
			_, err := tx.Conn().Exec(ctx, sql, ids)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			// Seen at -1 (none saved), but saved at 9: stale.
			res, _, err := e.offsets(e.processor(h), 10, 10, -1)
			if !errors.Is(err, txinbox.ErrCheckpointMoved) {
				t.Errorf("err = %v (results %v), want ErrCheckpointMoved", err, res)
			}
			if n := e.effects(); n != 10 {
				t.Errorf("%d effects, want the first consumer's 10", n)
			}
		})
	}
}

// TestOffsetsDeferredHandlerEndsTx: a handler given the transaction before
// it began that calls its Commit (and swallows the refusal) fails its
// message as with a begun one: nothing of it commits.
func TestOffsetsDeferredHandlerEndsTx(t *testing.T) {
	e := newDeferredEnv(t)
	p := e.processor(func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		sql, ids := insertIDs(msgs)
		if err := pgstore.Queue(tx, sql, ids); err != nil {
			return err
		}
		if msgs[0].ID == "m0" {
			tx.Commit(ctx) //nolint:errcheck // swallowed: what is tested
		}
		return nil
	})
	res, _, err := e.offsets(p, 0, 3, -1)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != txinbox.Retry || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "tx.Commit") {
		t.Errorf("first message: %+v, want a Retry naming tx.Commit", res[0])
	}
	if n := e.effects(); n != 0 {
		t.Errorf("%d effects, want none (the batch handler failed at its first message)", n)
	}
}

// TestOffsetsDeferredQueuedStatementRefused: in the deferred commit (one
// round trip from BEGIN to COMMIT), a queued statement that PostgreSQL
// cannot prepare, or an argument pgx cannot encode, fails before anything
// is sent: the error names the statement, the batch's other messages
// commit in the redo, and the watermark stops before the culprit.
func TestOffsetsDeferredQueuedStatementRefused(t *testing.T) {
	for name, bad := range map[string]func(ctx context.Context, tx pgx.Tx) error{
		"does not parse": func(ctx context.Context, tx pgx.Tx) error {
			return pgstore.Queue(tx, "INSERT INTO no_such_table VALUES (1)")
		},
		"unencodable argument": func(ctx context.Context, tx pgx.Tx) error {
			return pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", make(chan int))
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newDeferredEnv(t)
			p := e.processor(func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
				for _, m := range msgs {
					if m.ID == "m2" {
						if err := bad(ctx, tx); err != nil {
							return err
						}
						continue
					}
					if err := pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", m.ID); err != nil {
						return err
					}
				}
				return nil
			})
			res, _, err := e.offsets(p, 0, 4, -1)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != txinbox.Processed || res[1].Outcome != txinbox.Processed || res[2].Outcome != txinbox.Retry {
				t.Fatalf("outcomes %v, want the two before m2 processed, m2 retried", res)
			}
			if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "queued by the handler failed (INSERT INTO ") {
				t.Errorf("m2's error %v does not name its queued statement", res[2].Err)
			}
			if n := e.effects(); n != 2 {
				t.Errorf("%d effects, want 2 (m0, m1)", n)
			}
			if cps, err := p.Checkpoints(e.ctx, "t"); err != nil || cps[0] != 1 {
				t.Errorf("checkpoint %v, %v; want 1 (before m2)", cps, err)
			}
		})
	}
}

// TestOffsetsDeferredBeginOnDeadConnection: the server ended the pooled
// session on which a handler's first statement begins the deferred
// transaction (killed while the handler ran, before that statement).
// That is the database's failure, not the message's: no attempt is
// counted, nothing commits twice, and the batch commits once the
// connection is replaced (in the same call, or the next).
func TestOffsetsDeferredBeginOnDeadConnection(t *testing.T) {
	e := newDeferredEnv(t)
	var kill atomic.Bool
	// A Handler per message: a failure is the first message's, which
	// would be blamed (an attempt counted) if the dead session were
	// taken for its fault.
	p, err := txinbox.NewProcessor(e.d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if kill.CompareAndSwap(true, false) {
				e.killSessions()
			}
			_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1)", m.ID)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.offsets(p, 0, 10, -1); err != nil { // the pool keeps its session
		t.Fatal(err)
	}
	kill.Store(true)
	res, _, err := e.offsets(p, 10, 10, 9)
	if err != nil {
		t.Logf("first call after the kill: %v (a database failure: nothing acked)", err)
		res, _, err = e.offsets(p, 10, 10, 9)
	}
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	wantOutcome(t, res, txinbox.Processed)
	if n := e.effects(); n != 20 {
		t.Errorf("%d effects, want 20", n)
	}
	var attempts int
	if err := e.admin.QueryRow(e.ctx, `SELECT count(*) FROM "`+e.schema+`".txinbox_attempts`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 0 {
		t.Errorf("%d attempts recorded: the dead connection was blamed on a message", attempts)
	}
	if cps, err := p.Checkpoints(e.ctx, "t"); err != nil || cps[0] != 19 {
		t.Errorf("checkpoint %v, %v; want 19", cps, err)
	}
}

// killSessions ends the pool's sessions and waits until they are gone.
func (e *deferredEnv) killSessions() {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var left int
		err := e.admin.QueryRow(e.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
			e.schema).Scan(&left)
		if err != nil {
			e.t.Error(err)
			return
		}
		if left == 0 {
			return
		}
	}
	e.t.Error("the pool's sessions did not end within 10s")
}
