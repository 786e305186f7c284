package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// EffectSQL documents the form of a declarative effect's statements
// (txinbox.Config.Effect) on PostgreSQL: each is one data-modifying
// statement (INSERT, UPDATE, DELETE or MERGE; a trailing semicolon is
// ignored) that reads the batch's new messages from the relation
// new_messages. It runs inside the claim's statement, as a WITH query
// next to the inbox insert: once per batch, over the rows the claim
// inserted, in the batch's transaction. Its own tables are not the inbox's
// (it sees them as of the statement's start). For example:
//
//	INSERT INTO invoices (scope, message_id, body) SELECT scope, message_id, payload FROM new_messages
//
// Statements that never read payload or headers cost less per batch: the
// claim then skips joining the batch's payloads to the rows it inserted.
// PostgreSQL's plan of the statements says which those are (readsPayload).
// The value is the relation with its columns, new_messages(scope text,
// message_id text, source text, source_position text, partition_key text,
// payload bytea, headers jsonb, received_at timestamptz), the same text
// for every PostgreSQL store.
const EffectSQL = pgsql.EffectSQL

var _ store.EffectClaimer = (*pgTx)(nil)

// recentEffect is the claim last built or found for one form.
type recentEffect struct {
	statements []string
	sql        string
}

// effectQuery returns the claim of the effect's statements in a form,
// cached: the statements last used in that form are compared without
// allocating (a processor has one effect), others are found by key.
func (q *queries) effectQuery(statements []string, f pgsql.EffectForm) string {
	slot := &q.recent[f.Index()]
	if r := slot.Load(); r != nil && slices.Equal(r.statements, statements) {
		return r.sql
	}
	key := fmt.Sprint(f, len(statements), "\x00", strings.Join(statements, "\x00"))
	v, ok := q.effects.Load(key)
	if !ok {
		v = pgsql.EffectClaim(q.tables, statements, f)
		q.effects.Store(key, v)
	}
	slot.Store(&recentEffect{statements: slices.Clone(statements), sql: v.(string)})
	return v.(string)
}

var errEffectPartitioned = errors.New("pgstore: txinbox.Config.Effect is not available on the partitioned layout (use a handler)")

// ClaimWithEffect implements store.EffectClaimer: Claim with the effect's
// statements in the same statement. Like Claim, it classifies the keys it
// did not insert in the same round trip while batches meet duplicates.
func (t *pgTx) ClaimWithEffect(ctx context.Context, rows []store.EffectRow, statements []string) ([]store.ClaimResult, error) {
	if t.layout.partitioned {
		return nil, errEffectPartitioned
	}
	var probe querier = t.pool
	if t.tx != nil {
		probe = t.tx
	}
	f := pgsql.EffectForm{Classify: t.q.duplicates.Load(), Payload: t.q.readsPayload(ctx, probe, statements)}
	v, args := newEffectArgs(rows, f.Payload)
	// The checkpoint the processor planned (PlanCheckpoint) is saved in
	// the same statement, as Claim does: a Kafka batch of a declarative
	// effect is then this round trip and the COMMIT's.
	plan := t.takePlan()
	if plan != nil {
		f.Checkpoint = true
		args = append(args, checkpointArgs(plan)...)
	}
	res := make([]store.ClaimResult, len(rows))
	if err := t.claimed(ctx, t.q.effectQuery(statements, f), scanEffect(f, v, res), args...); err != nil {
		return res, err
	}
	t.saved = plan
	return t.afterClaim(ctx, res, v)
}

// scanEffect returns how a claim of the form f is read into res.
func scanEffect(f pgsql.EffectForm, v claimView, res []store.ClaimResult) func(pgx.Rows) error {
	switch {
	case f.Classify:
		return classifyClaimed(res)
	case f.Payload:
		return markOrdinals(res)
	default:
		return markInserted(v, res)
	}
}

// readsPayload reports whether an effect's statements read a message's
// payload or headers, by asking PostgreSQL: the plan (EXPLAIN VERBOSE, not
// run) of the claim without the join, where payload and headers are
// settings (pgsql.EffectProbe). new_messages, read once, is inlined into the statement
// that reads it, and a column nobody reads is left out of the plan; a
// column read by name, by a whole-row reference (to_jsonb(m)) or through
// a new_messages read twice (then materialised whole) shows in it. So
// the join is skipped only where the plan proves it unread. Asked once per
// statements; if the server refuses the probe (a mistake in the
// statements), the answer is yes, and the claim itself reports the
// mistake.
func (q *queries) readsPayload(ctx context.Context, db querier, statements []string) bool {
	// The answer last given is compared without allocating: a processor
	// has one effect, and this runs for every batch.
	if r := q.lastReads.Load(); r != nil && slices.Equal(r.statements, statements) {
		return r.reads
	}
	key := strings.Join(statements, "\x00")
	remember := func(reads bool) bool {
		q.payloadReads.Store(key, reads)
		q.lastReads.Store(&lastReads{statements: slices.Clone(statements), reads: reads})
		return reads
	}
	if v, ok := q.payloadReads.Load(key); ok {
		return remember(v.(bool))
	}
	reads, err := probePayload(ctx, db, pgsql.EffectProbe(q.tables, statements))
	if err != nil {
		// The server's refusal is an answer; a lost connection is not,
		// and the next claim asks again.
		if _, refused := errors.AsType[*pgconn.PgError](err); refused {
			return remember(true)
		}
		return true
	}
	return remember(reads)
}

// lastReads is the answer readsPayload gave last, and for what.
type lastReads struct {
	statements []string
	reads      bool
}

func probePayload(ctx context.Context, db querier, claim string) (bool, error) {
	empty := textArray{}
	rs, err := db.Query(ctx, "EXPLAIN (VERBOSE) "+claim, empty, empty, empty, empty, empty, byteaArray{}, timeArray{})
	if err != nil {
		return true, err
	}
	reads := false
	var line string
	_, err = pgx.ForEachRow(rs, []any{&line}, func() error {
		reads = reads || strings.Contains(line, pgsql.ProbeSetting)
		return nil
	})
	return reads, err
}

// newEffectArgs are the parameters of an effect's claim: the claim's
// columns of rows (newClaimArgs), and with payload the payloads and
// headers.
func newEffectArgs(rows []store.EffectRow, payload bool) (claimView, []any) {
	v := viewEffectRows(rows)
	args := newClaimArgs(v)
	if payload {
		n := len(rows)
		headers, payloads := make([]*string, n), make([][]byte, n)
		for i := range rows {
			payloads[i] = rows[i].Payload
			if rows[i].Headers != "" {
				headers[i] = &rows[i].Headers
			}
		}
		args = append(args, byteaArray(payloads), nullTextArray(headers))
	}
	return v, args
}

var _ store.EffectCommitter = (*Driver)(nil)

// CommitEffect implements store.EffectCommitter: the effect's claim as a
// statement of its own, no BEGIN, no COMMIT, the checkpoint in it. The
// keys it leaves unanswered are looked up afterwards (a newer snapshot),
// as Claim does.
func (d *Driver) CommitEffect(ctx context.Context, rows []store.EffectRow, statements []string, cp *store.Checkpoint, detectedAt time.Time) ([]store.ClaimResult, error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return nil, err
	}
	if l.partitioned {
		return nil, errEffectPartitioned
	}
	withCP := cp != nil
	f := pgsql.EffectForm{Classify: d.q.duplicates.Load() || withCP, Committed: true, Checkpoint: withCP, Drift: withCP,
		Payload: d.q.readsPayload(ctx, d.pool, statements)}
	v, args := newEffectArgs(rows, f.Payload)
	res := make([]store.ClaimResult, len(rows))
	if withCP {
		args = append(append(args, checkpointArgs(cp)...), detectedAt)
	}
	rs, err := d.pool.Query(ctx, d.q.effectQuery(statements, f), args...)
	if err == nil {
		err = scanEffect(f, v, res)(rs)
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && strings.Contains(pe.Message, pgsql.UnansweredKey) {
		return res, store.ErrUnanswered
	}
	if err != nil {
		return res, err
	}
	t := &pgTx{pool: d.pool, q: &d.q, layout: l}
	return t.afterClaim(ctx, res, v)
}

var _ store.EffectReader = (*Driver)(nil)

// EffectReadsMessages implements store.EffectReader: PostgreSQL's plan of
// the statements says whether they read new_messages.payload or
// .headers (readsPayload); true when it cannot be planned.
func (d *Driver) EffectReadsMessages(ctx context.Context, statements []string) bool {
	return d.q.readsPayload(ctx, d.pool, statements)
}

// CheckEffect implements store.EffectChecker: it prepares the claim
// statement of a declarative effect once, so that a mistake in the
// statements (a syntax error, an unknown table or column) shows before
// the first batch.
func (d *Driver) CheckEffect(ctx context.Context, statements []string) error {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Conn().Prepare(ctx, "", pgsql.EffectClaim(d.t, statements, pgsql.EffectForm{Classify: true, Payload: true})); err != nil {
		return fmt.Errorf("pgstore: the effect's statements: %w", err)
	}
	d.q.readsPayload(ctx, c, statements)
	return nil
}
