package pgstore_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
)

// TestDeclarativeEffect: an effect given as SQL runs in the claim's
// statement, once per new message: duplicates, drift and dead letters run
// nothing, a message the effect's table refuses fails alone (the batch is
// split down to it), and the headers reach the statement.
func TestDeclarativeEffect(t *testing.T) {
	d, ctx := driverWithEffects(t, `CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL CHECK (message_id <> 'poison'),
		body bytea, kind text)`)
	pool := d.Pool()
	stmt := `INSERT INTO effects SELECT scope, message_id, payload, headers->0->>'value' FROM new_messages`
	if err := d.CheckEffect(ctx, []string{stmt}); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckEffect(ctx, []string{"INSERT INTO no_such_table SELECT * FROM new_messages"}); err == nil ||
		!strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("CheckEffect of an unknown table: %v", err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", MaxAttempts: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{Statements: []string{stmt}, Headers: func(m *txinbox.Message) (string, error) {
			if len(m.Headers) == 0 {
				return "", errors.New("no headers")
			}
			return `[{"key":"kind","value":"` + m.Headers[0].Value + `"}]`, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	m := func(id, body string) *txinbox.Message {
		return &txinbox.Message{ID: id, Payload: []byte(body), Headers: []txinbox.Header{{Key: "kind", Value: "invoice"}}}
	}
	process := func(msgs ...*txinbox.Message) []txinbox.Outcome { t.Helper(); return outcomes(t, p, msgs...) }
	noHeaders := &txinbox.Message{ID: "bare", Payload: []byte("x")}
	got := process(m("a", "A"), m("b", "B"), m("poison", "P"), m("c", "C"), noHeaders)
	want := []txinbox.Outcome{txinbox.Processed, txinbox.Processed, txinbox.DeadLettered, txinbox.Processed, txinbox.DeadLettered}
	if !slices.Equal(got, want) {
		t.Errorf("first batch: %v, want %v", got, want)
	}
	got = process(m("a", "A"), m("b", "other"), m("d", "D"), m("poison", "P"))
	want = []txinbox.Outcome{txinbox.Duplicate, txinbox.Drift, txinbox.Processed, txinbox.DeadLettered}
	if !slices.Equal(got, want) {
		t.Errorf("second batch: %v, want %v", got, want)
	}
	// With a checkpoint: saved in the claim's transaction (the drift of a
	// batch must commit with its checkpoint).
	if _, err := p.ProcessCheckpoint(ctx, []*txinbox.Message{m("e", "E")}, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{6}}); err != nil {
		t.Fatal(err)
	}
	if cps, err := p.Checkpoints(ctx, "t"); err != nil || cps[0] != 6 {
		t.Errorf("checkpoints %v, %v; want partition 0 at 6", cps, err)
	}
	rows, _ := pool.Query(ctx, `SELECT message_id || ':' || convert_from(body, 'UTF8') || ':' || kind FROM effects ORDER BY 1`)
	effects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(effects, " ") != "a:A:invoice b:B:invoice c:C:invoice d:D:invoice e:E:invoice" {
		t.Errorf("effects %v", effects)
	}
}

// TestDeclarativeEffectRefusal: a new message with a Refusal (a source's
// delivery-count guard) is dead-lettered and its declarative effect does
// not commit, alone or with a checkpoint (the autocommitted form), while
// the rest of its batch takes effect once.
func TestDeclarativeEffectRefusal(t *testing.T) {
	d, ctx := driverWithEffects(t, `CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)`)
	stmt := `INSERT INTO effects SELECT scope, message_id FROM new_messages`
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{Statements: []string{stmt}}})
	if err != nil {
		t.Fatal(err)
	}
	tooOften := txinbox.Permanent(errors.New("delivered 3 times, more than MaxDeliveries (2)"))
	res, err := p.ProcessCheckpoint(ctx, []*txinbox.Message{{ID: "ok", Payload: []byte("x")},
		{ID: "refused", Payload: []byte("x"), Refusal: tooOften}}, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != txinbox.Processed || res[1].Outcome != txinbox.DeadLettered {
		t.Errorf("outcomes %v, %v; want processed, dead-lettered", res[0].Outcome, res[1].Outcome)
	}
	rows, _ := d.Pool().Query(ctx, `SELECT message_id FROM effects ORDER BY 1`)
	effects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(effects, " ") != "ok" {
		t.Errorf("effects %v, want only ok's", effects)
	}
}

// TestDeclarativeCheckpointRoundTrips: a declarative batch with a
// checkpoint (a Kafka partition's, `serve --effect` on Kafka) is one
// autocommitted statement: the claim, the effect, the drift it finds and
// the checkpoint (it took three round trips, then two). A key whose
// conflicting row committed after the statement's snapshot cannot be
// answered in it: the statement then commits nothing and the batch runs in
// a transaction, which records that key's drift with the checkpoint.
func TestDeclarativeCheckpointRoundTrips(t *testing.T) {
	e := newDeferredEnv(t)
	p, err := txinbox.NewProcessor(e.d, txinbox.Config[pgx.Tx]{Scope: "s", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{Statements: []string{"INSERT INTO effects SELECT message_id FROM new_messages"}}})
	if err != nil {
		t.Fatal(err)
	}
	// process runs a batch at positions from on; it may run beside the
	// test's goroutine (no t.Fatal in it).
	process := func(from int, payload string, ids ...int) ([]txinbox.Result, int64, error) {
		msgs, pos := make([]*txinbox.Message, len(ids)), make([]int64, len(ids))
		for i, id := range ids {
			msgs[i], pos[i] = &txinbox.Message{ID: fmt.Sprint("m", id), Payload: []byte(payload)}, int64(from+i)
		}
		before := e.trips.n.Load()
		res, err := p.ProcessCheckpoint(e.ctx, msgs, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: pos})
		return res, e.trips.n.Load() - before, err
	}
	batch := func(from int, payload string, ids ...int) ([]txinbox.Result, int64) {
		t.Helper()
		res, trips, err := process(from, payload, ids...)
		if err != nil {
			t.Fatal(err)
		}
		return res, trips
	}
	seq := func(from, n int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = from + i
		}
		return ids
	}
	wantOutcomes := func(res []txinbox.Result, want ...txinbox.Outcome) {
		t.Helper()
		for i, r := range res {
			if r.Outcome != want[min(i, len(want)-1)] {
				t.Errorf("message %d: %v, want %v", i, r.Outcome, want[min(i, len(want)-1)])
			}
		}
	}
	wantState := func(checkpoint int64, effects, drift int) {
		t.Helper()
		if cps, err := p.Checkpoints(e.ctx, "t"); err != nil || cps[0] != checkpoint {
			t.Errorf("checkpoints %v, %v; want partition 0 at %d", cps, err, checkpoint)
		}
		var n, d int
		if err := e.d.Pool().QueryRow(e.ctx, "SELECT (SELECT count(*) FROM effects), (SELECT count(*) FROM txinbox_drift)").Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		if n != effects || d != drift {
			t.Errorf("%d effects and %d drift rows, want %d and %d", n, d, effects, drift)
		}
	}
	batch(0, "x", seq(0, 10)...) // the first asks PostgreSQL whether the statement reads payloads
	res, trips := batch(10, "x", seq(10, 10)...)
	wantOutcomes(res, txinbox.Processed)
	if trips != 1 {
		t.Errorf("a declarative batch with a checkpoint took %d round trips, want 1", trips)
	}
	wantState(19, 20, 0)

	// A duplicate with another payload: drift, recorded in the statement.
	res, trips = batch(20, "other", 5, 20, 21)
	wantOutcomes(res, txinbox.Drift, txinbox.Processed)
	if trips != 1 {
		t.Errorf("a batch with drift took %d round trips, want 1", trips)
	}
	wantState(22, 22, 1)

	// m30's inbox row is inserted by another transaction, which commits
	// while the statement waits on it: m30 is neither inserted nor seen.
	other, err := e.d.Pool().Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
	if _, err := other.Exec(e.ctx, `INSERT INTO txinbox_inbox (scope, message_id, payload_hash) VALUES ('s', 'm30', '\x00')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		res, trips, err = process(30, "x", 30, 31)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for waiting := 0; waiting == 0; {
		if err := e.admin.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			e.schema).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited on the other transaction's row")
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view of the wait
	}
	if err := other.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantOutcomes(res, txinbox.Drift, txinbox.Processed)
	if trips < 2 {
		t.Errorf("the batch with an unanswered key took %d round trips: not redone in a transaction", trips)
	}
	wantState(31, 23, 2)
}

// TestDeclarativeCheckpointBadNeighbour: in a Kafka-like batch of a
// declarative effect (one autocommitted statement with its checkpoint), a
// message the effect's table refuses and one whose id PostgreSQL cannot
// store (a NUL byte) fail alone, dead-lettered: the others take effect
// once, and the checkpoint moves past them all.
func TestDeclarativeCheckpointBadNeighbour(t *testing.T) {
	d, ctx := driverWithEffects(t, `CREATE TABLE effects (message_id text NOT NULL CHECK (message_id <> 'poison'))`)
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "s", MaxAttempts: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{Statements: []string{"INSERT INTO effects SELECT message_id FROM new_messages"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "poison", "b", "nul\x00id", "c"}
	msgs, pos := make([]*txinbox.Message, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		msgs[i], pos[i] = &txinbox.Message{ID: id, Payload: []byte("x")}, int64(i+1)
	}
	res, err := p.ProcessCheckpoint(ctx, msgs, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := txinbox.Processed
		if ids[i] == "poison" || ids[i] == "nul\x00id" {
			want = txinbox.DeadLettered // MaxAttempts 1
		}
		if r.Outcome != want {
			t.Errorf("%q: %v (%v), want %v", ids[i], r.Outcome, r.Err, want)
		}
	}
	const checkpoint = 5 // every message acked
	if cps, err := p.Checkpoints(ctx, "t"); err != nil || cps[0] != checkpoint {
		t.Errorf("checkpoints %v, %v; want partition 0 at %d (outcomes %v)", cps, err, checkpoint, res)
	}
	rows, _ := d.Pool().Query(ctx, "SELECT message_id FROM effects ORDER BY 1")
	effects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(effects, " ") != "a b c" {
		t.Errorf("effects %v (%v), want a b c once each", effects, err)
	}
}

// TestEffectHeadersOnlyWhenRead: Config.Effect.Headers runs only for
// statements that read new_messages' payload or headers. A header it
// refuses then dead-letters its message; with statements that do not
// read them it fails nothing, in the autocommitted form and in a
// transaction (a checkpoint's batch with a repeat) alike.
func TestEffectHeadersOnlyWhenRead(t *testing.T) {
	d, ctx := driverWithEffects(t, `CREATE TABLE effects (message_id text NOT NULL); CREATE TABLE docs (message_id text, headers jsonb)`)
	for _, c := range []struct {
		name, statement string
		reads           bool
	}{
		{"unread", "INSERT INTO effects SELECT message_id FROM new_messages", false},
		{"read", "INSERT INTO docs SELECT message_id, headers FROM new_messages", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls int
			p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: c.name, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Effect: &txinbox.Effect{Statements: []string{c.statement}, Headers: func(m *txinbox.Message) (string, error) {
					calls++
					if m.Header("h") == "bad" {
						return "", errors.New("refused header")
					}
					return `[{"key":"h","value":"` + m.Header("h") + `"}]`, nil
				}}})
			if err != nil {
				t.Fatal(err)
			}
			batch := func(prefix string) []*txinbox.Message {
				var msgs []*txinbox.Message
				for _, h := range []string{"ok", "bad", "fine"} {
					msgs = append(msgs, &txinbox.Message{ID: prefix + h, Payload: []byte(h), Headers: []txinbox.Header{{Key: "h", Value: h}}})
				}
				return msgs
			}
			committed := batch("a-")
			inTx := append(batch("b-"), &txinbox.Message{ID: "b-ok", Payload: []byte("ok"), Headers: []txinbox.Header{{Key: "h", Value: "ok"}}})
			res, err := p.Process(ctx, committed)
			if err != nil {
				t.Fatal(err)
			}
			res2, err := p.ProcessCheckpoint(ctx, inTx, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{1, 2, 3, 4}})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range append(res, res2...) {
				m := append(committed, inTx...)[i]
				want := txinbox.Processed
				switch {
				case i == len(res)+3:
					want = txinbox.Duplicate // the repeat of b-ok
				case c.reads && m.Header("h") == "bad":
					want = txinbox.DeadLettered
				}
				if r.Outcome != want {
					t.Errorf("%s: %v (%v), want %v", m.ID, r.Outcome, r.Err, want)
				}
			}
			if want := map[bool]int{false: 0, true: 7}[c.reads]; calls != want { // the repeat's too
				t.Errorf("Headers called %d times, want %d", calls, want)
			}
		})
	}
	docs, err := pgx.CollectRows(must(d.Pool().Query(ctx, `SELECT message_id || ' ' || (headers->0->>'value') FROM docs ORDER BY 1`)), pgx.RowTo[string])
	if want := "a-fine fine,a-ok ok,b-fine fine,b-ok ok"; err != nil || strings.Join(docs, ",") != want {
		t.Errorf("docs %v (%v), want %s", docs, err, want)
	}
}
