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
	"github.com/txinbox/txinbox/store/schema"
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
const EffectSQL = "new_messages(scope text, message_id text, source text, source_position text, partition_key text, " +
	"payload bytea, headers jsonb, received_at timestamptz)"

var _ store.EffectClaimer = (*pgTx)(nil)

// effectClaim is the claim statement of a declarative effect in a form:
// with classify it answers for the keys it does not insert
// (pgsql.ClassifySelect), otherwise it returns the keys it inserted. The
// autocommit form (committed) has no commit guard (no handler runs) and
// saves the checkpoint given after the arrays when checkpoint is set.
//
// Statements that read a message's payload or headers (f.payload) need
// the batch's rows joined to the inserted ones: the inbox row holds
// neither. The others read new_messages straight from the insert's
// RETURNING, and the batch ships no payloads: on PostgreSQL 15 the join
// and the payloads were 10-15% of the declarative claim's time (see
// readsPayload for how the form is chosen). Their new_messages has no
// payload and headers columns, so that a statement that did read them
// fails loudly instead of reading NULL.
func effectClaim(t schema.Tables, statements []string, f effectForm) string {
	return effectClaimWith(t, statements, f, "")
}

// effectClaimWith is effectClaim; a probe (readsPayload) gives the no-join
// form's new_messages the columns payload and headers as the expressions
// in probe.
func effectClaimWith(t schema.Tables, statements []string, f effectForm, probe string) string {
	var b strings.Builder
	if f.committed {
		b.WriteString("WITH ")
	} else {
		b.WriteString(t.Expand(pgsql.GuardCTE) + ",\n")
	}
	insertFrom, next := "txinbox_batch m", 10
	switch {
	case f.payload:
		b.WriteString(batchCTE(true))
	case f.classify:
		// pgsql.ClassifySelect reads the batch again, with its ordinals.
		b.WriteString(batchCTE(false))
		next = 8
	default:
		insertFrom, next = pgsql.BatchRows, 8
	}
	returning := "scope, message_id"
	if !f.payload {
		returning = "scope, message_id, source, source_position, partition_key, received_at"
	}
	b.WriteString(t.Expand(`txinbox_inserted AS (
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM ` + insertFrom + `
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING ` + returning + `),
`))
	if f.payload {
		b.WriteString(`txinbox_new AS (
SELECT m.* FROM txinbox_batch m JOIN txinbox_inserted i ON i.scope = m.scope AND i.message_id = m.message_id),
new_messages AS (
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload, m.headers::jsonb AS headers, m.received_at
FROM txinbox_new m)`)
	} else {
		b.WriteString(`new_messages AS (
SELECT i.scope, i.message_id, i.source, i.source_position, i.partition_key, ` + probe + `i.received_at
FROM txinbox_inserted i)`)
	}
	for i, s := range statements {
		// A trailing semicolon would end the claim; the line break keeps
		// a trailing -- comment from swallowing the parenthesis.
		s = strings.TrimRight(strings.TrimSpace(s), "; \t\r\n")
		fmt.Fprintf(&b, ",\ntxinbox_effect_%d AS (%s\n)", i+1, s)
	}
	switch {
	case f.drift:
		b.WriteString(driftTail(t, next))
		return b.String()
	case f.checkpoint:
		b.WriteString(t.Expand(fmt.Sprintf(`,
txinbox_checkpoint AS (INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($%d, $%d, $%d, $%d, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)`, next, next+1, next+2, next+3)))
	}
	switch {
	case f.classify:
		b.WriteString(pgsql.ClassifySelect(t, "txinbox_batch m"))
	case f.payload:
		// The batch's ordinals of the rows it inserted: read without a
		// string or a map per row (markOrdinals).
		b.WriteString("\nSELECT ord FROM txinbox_new")
	default:
		b.WriteString("\nSELECT scope, message_id FROM txinbox_inserted")
	}
	return b.String()
}

// unansweredKey is the text of the error of a drift form's statement that
// could not answer for every key.
const unansweredKey = "txinbox: unanswered key"

// driftTail ends the autocommitted claim with a checkpoint: it classifies
// the keys it did not insert (pgsql.ClassifySelect, as txinbox_seen), records
// the drift among them (a stored payload hash, the inbox's or else the
// dead letter's, other than the one received), and saves the checkpoint
// (parameters $next to $next+3) only if every key was answered: otherwise
// the cast of unansweredKey fails the whole statement. A key neither
// inserted nor seen had its conflicting row committed after the
// statement's snapshot; its drift could not be recorded here, and the
// checkpoint must not move past it unrecorded. The drift's detection time
// is parameter $next+4.
func driftTail(t schema.Tables, next int) string {
	return ",\ntxinbox_seen AS (" + pgsql.ClassifySelect(t, "txinbox_batch m", "source", "source_position", "payload_hash") + ")" +
		t.Expand(fmt.Sprintf(`,
txinbox_drift AS (
INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
SELECT scope, message_id, source, source_position, coalesce(hash, dead), payload_hash, $%[5]d::timestamptz
FROM txinbox_seen WHERE coalesce(hash, dead) <> payload_hash),
txinbox_checkpoint AS (
INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
SELECT $%[1]d::text, $%[2]d::text, $%[3]d::text, $%[4]d::bigint, now()
WHERE (SELECT (CASE WHEN bool_and(hash IS NOT NULL OR dead IS NOT NULL) IS NOT FALSE THEN '1'
                    ELSE '`+unansweredKey+`' END)::int FROM txinbox_seen) = 1
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)
SELECT ord, hash, dead FROM txinbox_seen`, next, next+1, next+2, next+3, next+4))
}

// batchCTE is the CTE txinbox_batch of an effect's claim: the batch with
// its ordinals, and with payload its payloads and headers (pgsql.BatchSelect).
func batchCTE(payload bool) string {
	return "txinbox_batch AS (" + pgsql.BatchSelect(true, payload) + "),\n"
}

// effectForm names one of the forms of an effect's claim.
// With drift (committed, with a checkpoint, classifying) the statement
// also records the drift it finds and fails unless it answered for every
// key (driftTail).
type effectForm struct{ classify, committed, checkpoint, payload, drift bool }

// index numbers the forms, for queries.recent.
func (f effectForm) index() int {
	i := 0
	for bit, on := range []bool{f.classify, f.committed, f.checkpoint, f.payload, f.drift} {
		if on {
			i |= 1 << bit
		}
	}
	return i
}

// recentEffect is the claim last built or found for one form.
type recentEffect struct {
	statements []string
	sql        string
}

// effectQuery returns the claim of the effect's statements in a form,
// cached: the statements last used in that form are compared without
// allocating (a processor has one effect), others are found by key.
func (q *queries) effectQuery(statements []string, f effectForm) string {
	slot := &q.recent[f.index()]
	if r := slot.Load(); r != nil && slices.Equal(r.statements, statements) {
		return r.sql
	}
	key := fmt.Sprint(f, len(statements), "\x00", strings.Join(statements, "\x00"))
	v, ok := q.effects.Load(key)
	if !ok {
		v = effectClaim(q.tables, statements, f)
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
	f := effectForm{classify: t.q.duplicates.Load(), payload: t.q.readsPayload(ctx, probe, statements)}
	v, args := newEffectArgs(rows, f.payload)
	// The checkpoint the processor planned (PlanCheckpoint) is saved in
	// the same statement, as Claim does: a Kafka batch of a declarative
	// effect is then this round trip and the COMMIT's.
	plan := t.takePlan()
	if plan != nil {
		f.checkpoint = true
		args = append(args, checkpointArgs(plan)...)
	}
	res := make([]store.ClaimResult, len(rows))
	if err := t.claimed(ctx, t.q.effectQuery(statements, f), f.scan(v, res), args...); err != nil {
		return res, err
	}
	t.saved = plan
	return t.afterClaim(ctx, res, v)
}

// scan returns how a claim of the form is read into res.
func (f effectForm) scan(v claimView, res []store.ClaimResult) func(pgx.Rows) error {
	switch {
	case f.classify:
		return classifyClaimed(res)
	case f.payload:
		return markOrdinals(res)
	default:
		return markInserted(v, res)
	}
}

// probeColumns are new_messages' payload and headers in readsPayload's
// probe: expressions that show in the plan by name wherever they are
// evaluated (current_setting is stable, so the planner keeps the call).
const probeColumns = "current_setting('txinbox.probe_payload', true)::bytea AS payload, " +
	"current_setting('txinbox.probe_headers', true)::jsonb AS headers, "

// readsPayload reports whether an effect's statements read a message's
// payload or headers, by asking PostgreSQL: the plan (EXPLAIN VERBOSE, not
// run) of the claim without the join, where payload and headers are
// probeColumns. new_messages, read once, is inlined into the statement
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
	reads, err := probePayload(ctx, db, effectClaimWith(q.tables, statements, effectForm{committed: true}, probeColumns))
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
		reads = reads || strings.Contains(line, "txinbox.probe_")
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
	f := effectForm{classify: d.q.duplicates.Load() || withCP, committed: true, checkpoint: withCP, drift: withCP,
		payload: d.q.readsPayload(ctx, d.pool, statements)}
	v, args := newEffectArgs(rows, f.payload)
	res := make([]store.ClaimResult, len(rows))
	if withCP {
		args = append(append(args, checkpointArgs(cp)...), detectedAt)
	}
	rs, err := d.pool.Query(ctx, d.q.effectQuery(statements, f), args...)
	if err == nil {
		err = f.scan(v, res)(rs)
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && strings.Contains(pe.Message, unansweredKey) {
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
	if _, err := c.Conn().Prepare(ctx, "", effectClaim(d.t, statements, effectForm{classify: true, payload: true})); err != nil {
		return fmt.Errorf("pgstore: the effect's statements: %w", err)
	}
	d.q.readsPayload(ctx, c, statements)
	return nil
}
