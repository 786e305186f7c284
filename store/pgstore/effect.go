package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/txinbox/txinbox/internal/schema"
	"github.com/txinbox/txinbox/store"
)

// EffectSQL documents the form of a declarative effect's statements
// (txinbox.Config.Effect) on PostgreSQL: each is one data-modifying
// statement (INSERT, UPDATE, DELETE or MERGE, without a trailing
// semicolon) that reads the batch's new messages from the relation
// new_messages. It runs inside the claim's statement, as a WITH query
// next to the inbox insert: once per batch, over the rows the claim
// inserted, in the batch's transaction. Its own tables are not the inbox's
// (it sees them as of the statement's start). For example:
//
//	INSERT INTO invoices (scope, message_id, body) SELECT scope, message_id, payload FROM new_messages
const EffectSQL = "new_messages(scope text, message_id text, source text, source_position text, partition_key text, " +
	"payload bytea, headers jsonb, received_at timestamptz)"

var _ store.EffectClaimer = (*pgTx)(nil)

// effectClaim is the claim statement of a declarative effect: classify
// answers for the keys it does not insert (classifySelect), otherwise it returns the
// keys it inserted (the plain claim's). The autocommit form (committed)
// has no commit guard (no handler runs) and saves the checkpoint of
// parameters $10-$13 when checkpoint is set.
func effectClaim(t schema.Tables, statements []string, classify, committed, checkpoint bool) string {
	var b strings.Builder
	head := guardCTE + ",\n"
	if committed {
		head = "WITH "
	}
	b.WriteString(t.Expand(head + `txinbox_batch AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
        $7::timestamptz[], $8::bytea[], $9::text[])
    WITH ORDINALITY AS m(scope, message_id, source, source_position, partition_key, payload_hash, received_at, payload, headers, ord)),
txinbox_inserted AS (
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM txinbox_batch m
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING scope, message_id),
txinbox_new AS (
SELECT m.* FROM txinbox_batch m JOIN txinbox_inserted i ON i.scope = m.scope AND i.message_id = m.message_id),
new_messages AS (
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload, m.headers::jsonb AS headers, m.received_at
FROM txinbox_new m)`))
	for i, s := range statements {
		fmt.Fprintf(&b, ",\ntxinbox_effect_%d AS (%s)", i+1, s)
	}
	if checkpoint {
		b.WriteString(t.Expand(`,
txinbox_checkpoint AS (INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($10, $11, $12, $13, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)`))
	}
	if !classify {
		// The batch's ordinals of the rows it inserted: read without a
		// string or a map per row (markOrdinals).
		b.WriteString("\nSELECT ord FROM txinbox_new")
		return b.String()
	}
	b.WriteString(classifySelect(t, "txinbox_batch m"))
	return b.String()
}

// effectForm names one of the forms of an effect's claim.
type effectForm struct{ classify, committed, checkpoint bool }

// index numbers the forms, for queries.recent.
func (f effectForm) index() int {
	i := 0
	for bit, on := range []bool{f.classify, f.committed, f.checkpoint} {
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
		v = effectClaim(q.tables, statements, f.classify, f.committed, f.checkpoint)
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
	ea := newEffectArgs(rows)
	res := make([]store.ClaimResult, len(rows))
	f := effectForm{classify: t.q.duplicates.Load()}
	scan := markOrdinals(res)
	if f.classify {
		scan = classifyClaimed(res)
	}
	if err := t.claimed(ctx, t.q.effectQuery(statements, f), scan, ea.args...); err != nil {
		return res, err
	}
	return t.afterClaim(ctx, res, ea.scopes, ea.ids)
}

// effectArgs are the array parameters of an effect's claim.
type effectArgs struct {
	args        []any
	scopes, ids []string
	claimRows   []store.ClaimRow
}

func newEffectArgs(rows []store.EffectRow) effectArgs {
	n := len(rows)
	scopes, ids := make([]string, n), make([]string, n)
	sources, positions, pkeys, headers := make([]string, n), make([]string, n), make([]string, n), make([]*string, n)
	hashes, payloads, received := make([][]byte, n), make([][]byte, n), make([]time.Time, n)
	claimRows := make([]store.ClaimRow, n)
	for i, r := range rows {
		scopes[i], ids[i], sources[i], positions[i], pkeys[i] = r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey
		hashes[i], payloads[i], received[i], claimRows[i] = r.PayloadHash, r.Payload, r.ReceivedAt, r.ClaimRow
		if r.Headers != "" {
			headers[i] = &rows[i].Headers
		}
	}
	return effectArgs{args: []any{textArray(scopes), textArray(ids), textArray(sources), textArray(positions), textArray(pkeys),
		byteaArray(hashes), timeArray(received), byteaArray(payloads), nullTextArray(headers)},
		scopes: scopes, ids: ids, claimRows: claimRows}
}

var _ store.EffectCommitter = (*Driver)(nil)

// CommitEffect implements store.EffectCommitter: the effect's claim as a
// statement of its own, no BEGIN, no COMMIT, the checkpoint in it. The
// keys it leaves unanswered are looked up afterwards (a newer snapshot),
// as Claim does.
func (d *Driver) CommitEffect(ctx context.Context, rows []store.EffectRow, statements []string, cp *store.Checkpoint) ([]store.ClaimResult, error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return nil, err
	}
	if l.partitioned {
		return nil, errEffectPartitioned
	}
	ea := newEffectArgs(rows)
	res := make([]store.ClaimResult, len(rows))
	f := effectForm{classify: d.q.duplicates.Load(), committed: true, checkpoint: cp != nil}
	scan := markOrdinals(res)
	if f.classify {
		scan = classifyClaimed(res)
	}
	args := ea.args
	if cp != nil {
		args = append(args, cp.Scope, cp.Source, cp.Partition, cp.Position)
	}
	rs, err := d.pool.Query(ctx, d.q.effectQuery(statements, f), args...)
	if err == nil {
		err = scan(rs)
	}
	if err != nil {
		return res, err
	}
	t := &pgTx{pool: d.pool, q: &d.q, layout: l}
	return t.afterClaim(ctx, res, ea.scopes, ea.ids)
}

// CheckEffect prepares the claim statement of a declarative effect once,
// so that a mistake in the statements (a syntax error, an unknown table
// or column) shows before the first batch.
func (d *Driver) CheckEffect(ctx context.Context, statements []string) error {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Conn().Prepare(ctx, "", effectClaim(d.t, statements, true, false, false)); err != nil {
		return fmt.Errorf("pgstore: the effect's statements: %w", err)
	}
	return nil
}
