package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
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

var errEffectPartitioned = errors.New("pgstore: txinbox.Config.Effect is not available on the partitioned layout (use a handler)")

// ClaimWithEffect implements store.EffectClaimer: Claim with the effect's
// statements in the same statement. Like Claim, it classifies the keys it
// did not insert in the same round trip while batches meet duplicates.
func (t *pgTx) ClaimWithEffect(ctx context.Context, rows []store.EffectRow, statements []string) ([]store.ClaimResult, error) {
	if t.layout.Partitioned {
		return nil, errEffectPartitioned
	}
	f := pgsql.EffectForm{Classify: t.q.Duplicates.Load(), Payload: t.q.ReadsPayload(ctx, t.querier(), statements)}
	v, args := newEffectArgs(rows, f.Payload)
	// The checkpoint the processor planned (PlanCheckpoint) is saved in
	// the same statement, as Claim does: a Kafka batch of a declarative
	// effect is then this round trip and the COMMIT's.
	plan := t.takePlan()
	if plan != nil {
		f.Checkpoint = true
		args = append(args, pgcore.CheckpointArgs(plan)...)
	}
	res := make([]store.ClaimResult, len(rows))
	if err := t.claimed(ctx, t.q.EffectQuery(statements, f), scanEffect(f, v, res), args...); err != nil {
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

// querier is the pool as a pgcore.Querier.
func (d *Driver) querier() pgcore.Querier { return pgxQuerier[*pgxpool.Pool]{d.pool} }

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
	l, err := pgcore.LayoutOf(ctx, d.core)
	if err != nil {
		return nil, err
	}
	if l.Partitioned {
		return nil, errEffectPartitioned
	}
	withCP := cp != nil
	f := pgsql.EffectForm{Classify: d.q.Duplicates.Load() || withCP, Committed: true, Checkpoint: withCP, Drift: withCP,
		Payload: d.q.ReadsPayload(ctx, d.querier(), statements)}
	v, args := newEffectArgs(rows, f.Payload)
	res := make([]store.ClaimResult, len(rows))
	if withCP {
		args = append(append(args, pgcore.CheckpointArgs(cp)...), detectedAt)
	}
	rs, err := d.pool.Query(ctx, d.q.EffectQuery(statements, f), args...)
	if err == nil {
		err = scanEffect(f, v, res)(rs)
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && strings.Contains(pe.Message, pgsql.UnansweredKey) {
		return res, store.ErrUnanswered
	}
	if err != nil {
		return res, err
	}
	t := &pgTx{d: d, pool: d.pool, q: d.q, layout: l}
	return t.afterClaim(ctx, res, v)
}

var _ store.EffectReader = (*Driver)(nil)

// EffectReadsMessages implements store.EffectReader: PostgreSQL's plan of
// the statements says whether they read new_messages.payload or
// .headers (readsPayload); true when it cannot be planned.
func (d *Driver) EffectReadsMessages(ctx context.Context, statements []string) bool {
	return d.q.ReadsPayload(ctx, d.querier(), statements)
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
	d.q.ReadsPayload(ctx, pgxQuerier[*pgxpool.Conn]{c}, statements)
	return nil
}
