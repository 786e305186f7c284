package serve_test

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox/internal/testdb"
)

// These tests stop the built binary while a NATS JetStream batch is inside
// its transaction. The batch is held there by a gate, not by a guess at
// timing: the test holds a PostgreSQL advisory lock, and the effect of the
// last message published waits for it (in the batch transaction, after
// the message's effect row was written). When a backend waits on the gate,
// every message was fetched: each is either in the batch in flight or in
// an earlier batch, committed and acked.

// gate is an advisory lock held by the test on a connection of its own.
type gate struct {
	t    *testing.T
	conn *pgxpool.Conn
	key  int64
	held bool
}

// holdGate takes the gate of schema (its key is derived from the name, so
// that parallel tests do not share one).
func holdGate(t *testing.T, pool *pgxpool.Pool, schema string) *gate {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(schema))
	g := &gate{t: t, key: int64(h.Sum32() & 0x7fffffff)}
	var err error
	if g.conn, err = pool.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.conn.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, g.key); err != nil {
		g.conn.Release()
		t.Fatal(err)
	}
	g.held = true
	t.Cleanup(func() {
		g.release()
		g.conn.Release()
	})
	return g
}

// waiting reports whether a transaction waits on the gate.
func (g *gate) waiting() bool {
	g.t.Helper()
	var n int
	// A bigint key below 2^31 is classid 0, objid key.
	err := g.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 0 AND objid::bigint = $1 AND objsubid = 1 AND NOT granted`, g.key).Scan(&n)
	if err != nil {
		g.t.Fatal(err)
	}
	return n > 0
}

// release opens the gate; the transaction waiting on it goes on.
func (g *gate) release() {
	if !g.held {
		return
	}
	g.held = false
	if _, err := g.conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, g.key); err != nil {
		g.t.Error(err)
	}
}

// gatedServeArgs are serve's arguments for a NATS source whose effect
// writes one row per message and, for the gated-th effect run (counted by
// a sequence, outside any transaction), waits on g and then sleeps a
// little (so that a batch cancelled at the signal has no chance to finish
// before the cancellation lands).
func gatedServeArgs(t *testing.T, pool *pgxpool.Pool, schema, natsURL, consumer string, g *gate, gated int, more ...string) []string {
	t.Helper()
	effectsTable(t, pool, schema)
	if _, err := pool.Exec(context.Background(), `CREATE SEQUENCE `+schema+`.effect_runs`); err != nil {
		t.Fatal(err)
	}
	args := []string{"--db", testdb.URL(), "--schema", schema, "--no-purge", "--http-listen", "127.0.0.1:0",
		"--nats-url", natsURL, "--nats-stream", "ORDERS", "--nats-consumer", consumer, "--nats-key", "header:message-id",
		"--effect", "sql",
		"--effect-sql", "INSERT INTO " + schema + ".effects (scope, id, source, payload, detail) " +
			"VALUES ($1, $2, $4, $9, concat_ws(' ', $3::text, $5::text, $6::text, $7::text, $8::text))",
		"--effect-sql", "SELECT pg_advisory_xact_lock_shared(" + strconv.FormatInt(g.key, 10) + "), pg_sleep(0.3) " +
			"FROM (SELECT nextval('" + schema + ".effect_runs') AS n) AS run WHERE run.n = " + strconv.Itoa(gated)}
	return append(args, more...)
}

// waitStopping waits until serve saw its stop signal (/readyz answers
// "stopping") or exited.
func (p *serveProc) waitStopping() {
	p.t.Helper()
	waitFor(p.t, "serve to start stopping", func() bool {
		if p.exited() {
			return true
		}
		_, body := p.get("/readyz")
		return strings.Contains(body, "stopping")
	})
}

// acked returns how many of the stream's n messages the consumer has
// acked: those neither waiting for delivery nor for an ack.
func acked(t *testing.T, js natsjs.JetStream, consumer string, n int) int {
	t.Helper()
	pending, ackPending := consumerPending(t, js, consumer)
	return n - int(pending) - ackPending
}

// waitAcked waits up to 15 s for the broker to count want acks; the acks
// of the process that exited were flushed before it did, but JetStream
// applies them in the background (a fixed 3 s was short under load). With
// no consumer running nothing is redelivered, so an AckWait passing
// meanwhile moves a message from waiting for its ack back to pending and
// leaves the count alone.
func waitAcked(t *testing.T, js natsjs.JetStream, consumer string, n, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := acked(t, js, consumer, n)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			pending, ackPending := consumerPending(t, js, consumer)
			t.Fatalf("consumer %s: %d of %d messages acked (pending %d, waiting for an ack %d); want %d acked",
				consumer, got, n, pending, ackPending, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restartAndFinish starts serve again after a stop that left some messages
// unacked, waits until every message has its effect and is acked, stops
// it with SIGTERM, and checks that each message had exactly one effect
// and that none came back as a duplicate (a committed message that was
// not acked would).
func restartAndFinish(t *testing.T, pool *pgxpool.Pool, js natsjs.JetStream, schema, consumer string, orders, committed int, args []string) {
	t.Helper()
	p := startServeBin(t, nil, args...)
	waitFor(t, "every message after the restart", func() bool {
		_, distinct := effectCounts(t, pool, schema, "nats")
		pending, ackPending := consumerPending(t, js, consumer)
		return distinct == orders && pending == 0 && ackPending == 0
	})
	dups := p.metric(`txinbox_messages_total{outcome="duplicate",scope="nats",source="ORDERS"}`)
	processed := p.metric(`txinbox_messages_total{outcome="processed",scope="nats",source="ORDERS"}`)
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM after the restart: exit %d:\n%s", code, p.stderr)
	}
	if dups > 0 || processed != float64(orders-committed) {
		t.Errorf("after the restart: %v processed, %v duplicates; want %d processed (the unacked ones), no duplicate",
			processed, dups, orders-committed)
	}
	if rows, distinct := effectCounts(t, pool, schema, "nats"); rows != orders || distinct != orders {
		t.Errorf("after the restart: %d effect rows, %d ids; want %d of each", rows, distinct, orders)
	}
}

// TestServeSIGTERMDrainsBatchInFlight: SIGTERM while a batch is inside its
// transaction lets that batch finish: serve exits 0, the batch's effects
// are committed, and the broker has every message acked before any
// restart. Serve cancelling the batch at the signal would roll it back and
// leave its messages unacked: no effect rows, NumAckPending > 0.
func TestServeSIGTERMDrainsBatchInFlight(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	natsURL, js := startNATS(t)
	const orders = 5
	publishOrders(t, js, orders, 0)
	g := holdGate(t, pool, schema)
	p := startServeBin(t, nil, gatedServeArgs(t, pool, schema, natsURL, "drain", g, orders)...)
	waitFor(t, "the last message's effect to wait on the gate", g.waiting)
	if rows, _ := effectCounts(t, pool, schema, "nats"); rows >= orders {
		t.Fatalf("%d effects committed before the SIGTERM; want the last batch still in its transaction", rows)
	}
	p.send(syscall.SIGTERM)
	p.waitStopping()
	g.release()
	code, lines := p.wait(time.Minute, "SIGTERM")
	if code != 0 || !slices.Contains(lines, "stopped") || strings.Contains(p.stderr.String(), "cut") {
		t.Fatalf("SIGTERM with a batch in flight: exit %d, log lines %q:\n%s", code, lines, p.stderr)
	}
	if rows, distinct := effectCounts(t, pool, schema, "nats"); rows != orders || distinct != orders {
		t.Errorf("after the SIGTERM: %d effect rows, %d ids; want %d of each (the batch in flight committed)", rows, distinct, orders)
	}
	var inbox int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.txinbox_inbox WHERE scope = 'nats'`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if inbox != orders {
		t.Errorf("inbox rows %d, want %d", inbox, orders)
	}
	waitAcked(t, js, "drain", orders, orders)
	if pending, ackPending := consumerPending(t, js, "drain"); pending != 0 || ackPending != 0 {
		t.Errorf("consumer pending %d, waiting for an ack %d; want 0, 0", pending, ackPending)
	}
}

// TestServeSecondSignalExitsAtOnce: a second signal during the drain ends
// serve at once (by the signal, not exit 0), while the batch in flight
// still waits in its transaction; the messages committed before are acked,
// those of the batch are neither committed nor acked; after a restart every
// message has exactly one effect.
func TestServeSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		first, second syscall.Signal
	}{
		{"SIGTERM then SIGINT", syscall.SIGTERM, syscall.SIGINT},
		{"SIGINT then SIGTERM", syscall.SIGINT, syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := testdb.Require(t)
			schema := testdb.NewSchema(t, pool)
			natsURL, js := startNATS(t)
			const orders = 6
			publishOrders(t, js, orders, 0)
			g := holdGate(t, pool, schema)
			// A long shutdown timeout: only the second signal can end
			// serve while the gate is shut.
			args := gatedServeArgs(t, pool, schema, natsURL, "twice", g, orders, "--shutdown-timeout", "2m", "--nats-ack-wait", "1s")
			p := startServeBin(t, nil, args...)
			waitFor(t, "the last message's effect to wait on the gate", g.waiting)
			before, _ := effectCounts(t, pool, schema, "nats")
			p.send(tc.first)
			p.waitStopping()
			p.send(tc.second)
			code, lines := p.wait(30*time.Second, "the second signal (the gate still shut)")
			ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if code == 0 || !ws.Signaled() || ws.Signal() != tc.second || slices.Contains(lines, "stopped") {
				t.Fatalf("second signal: exit %d (%v), stdout %q; want the process ended by %v:\n%s",
					code, p.cmd.ProcessState, lines, tc.second, p.stderr)
			}
			committed, distinct := effectCounts(t, pool, schema, "nats")
			if committed != before || distinct != committed || committed >= orders {
				t.Fatalf("after the second signal: %d effect rows, %d ids; want the %d committed before it", committed, distinct, before)
			}
			waitAcked(t, js, "twice", orders, committed)
			// The orphaned transaction goes on, then finds its client
			// gone and rolls back.
			g.release()
			restartAndFinish(t, pool, js, schema, "twice", orders, committed, args)
		})
	}
}

// TestServeShutdownTimeoutCutsBatch: a batch still in its transaction when
// --shutdown-timeout passes is cut: exit 1, nothing of it committed or
// acked, and after a restart every message has exactly one effect.
func TestServeShutdownTimeoutCutsBatch(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	natsURL, js := startNATS(t)
	const orders = 6
	publishOrders(t, js, orders, 0)
	g := holdGate(t, pool, schema)
	args := gatedServeArgs(t, pool, schema, natsURL, "cut", g, orders, "--shutdown-timeout", "500ms", "--nats-ack-wait", "1s")
	p := startServeBin(t, nil, args...)
	waitFor(t, "the last message's effect to wait on the gate", g.waiting)
	before, _ := effectCounts(t, pool, schema, "nats")
	code, lines := p.signal(syscall.SIGTERM)
	if code != 1 || !strings.Contains(p.stderr.String(), "batches still in flight after 500ms were cut") ||
		slices.Contains(lines, "stopped") {
		t.Fatalf("SIGTERM with the gate shut and --shutdown-timeout 500ms: exit %d, log lines %q:\n%s", code, lines, p.stderr)
	}
	committed, distinct := effectCounts(t, pool, schema, "nats")
	if committed != before || distinct != committed || committed >= orders {
		t.Fatalf("after the cut: %d effect rows, %d ids; want the %d committed before it", committed, distinct, before)
	}
	waitAcked(t, js, "cut", orders, committed)
	g.release()
	restartAndFinish(t, pool, js, schema, "cut", orders, committed, args)
}
