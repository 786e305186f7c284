package pgdbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// EffectSQL documents the form of a declarative effect's statements
// (txinbox.Config.Effect): pgstore.EffectSQL, the same text for every
// PostgreSQL store.
const EffectSQL = pgsql.EffectSQL

var (
	_ store.EffectClaimer   = (*dbTx)(nil)
	_ store.EffectCommitter = (*Driver)(nil)
	_ store.EffectReader    = (*Driver)(nil)
	_ store.EffectChecker   = (*Driver)(nil)
)

var errEffectPartitioned = errors.New("pgdbstore: txinbox.Config.Effect is not available on the partitioned layout (use a handler)")

// ClaimWithEffect implements store.EffectClaimer: Claim with the effect's
// statements in the same statement.
func (t *dbTx) ClaimWithEffect(ctx context.Context, rows []store.EffectRow, statements []string) ([]store.ClaimResult, error) {
	if t.layout.Partitioned {
		return nil, errEffectPartitioned
	}
	q := t.d.q
	f := pgsql.EffectForm{Classify: q.Duplicates.Load(), Payload: q.ReadsPayload(ctx, t.q, statements)}
	v, args := effectArgs(rows, f.Payload)
	plan := t.plan
	t.plan = nil
	if plan != nil {
		f.Checkpoint = true
		args = append(args, pgcore.CheckpointArgs(plan)...)
	}
	res := make([]store.ClaimResult, len(rows))
	if err := t.claimed(ctx, q.EffectQuery(statements, f), scanEffect(f, v, res), args); err != nil {
		return res, err
	}
	t.saved = plan
	return res, pgcore.AfterClaim(ctx, t.d.core, t.q, t.layout, res, v.key)
}

// scanEffect returns how a claim of the form f is read into res.
func scanEffect(f pgsql.EffectForm, v view, res []store.ClaimResult) func(*sql.Rows) error {
	switch {
	case f.Classify:
		return classifyClaimed(res)
	case f.Payload:
		return markOrdinals(res)
	default:
		return markInserted(v, res)
	}
}

// effectArgs are the parameters of an effect's claim: the claim's columns
// of rows, and with payload the payloads and headers ("" is NULL).
func effectArgs(rows []store.EffectRow, payload bool) (view, []any) {
	v := view{n: len(rows), row: func(i int) *store.ClaimRow { return &rows[i].ClaimRow }}
	args := claimArgs(v)
	if payload {
		args = append(args,
			pgcore.ArrayLiteral(len(rows), func(b *strings.Builder, i int) bool {
				if rows[i].Payload == nil {
					return false
				}
				pgcore.ByteaElem(b, rows[i].Payload)
				return true
			}),
			pgcore.ArrayLiteral(len(rows), func(b *strings.Builder, i int) bool {
				if rows[i].Headers == "" {
					return false
				}
				pgcore.QuoteElem(b, rows[i].Headers)
				return true
			}))
	}
	return v, args
}

// CommitEffect implements store.EffectCommitter: the effect's claim as a
// statement of its own, no BEGIN, no COMMIT, the checkpoint in it: one
// round trip per batch, as pgstore's.
func (d *Driver) CommitEffect(ctx context.Context, rows []store.EffectRow, statements []string, cp *store.Checkpoint, detectedAt time.Time) ([]store.ClaimResult, error) {
	l, err := pgcore.LayoutOf(ctx, d.core)
	if err != nil {
		return nil, err
	}
	if l.Partitioned {
		return nil, errEffectPartitioned
	}
	withCP := cp != nil
	db := on(d.db)
	f := pgsql.EffectForm{Classify: d.q.Duplicates.Load() || withCP, Committed: true, Checkpoint: withCP, Drift: withCP,
		Payload: d.q.ReadsPayload(ctx, db, statements)}
	v, args := effectArgs(rows, f.Payload)
	res := make([]store.ClaimResult, len(rows))
	if withCP {
		args = append(append(args, pgcore.CheckpointArgs(cp)...), detectedAt)
	}
	err = scanned(d.db.QueryContext(ctx, d.q.EffectQuery(statements, f), args...))(scanEffect(f, v, res))
	if pgcore.SQLState(err) != "" && strings.Contains(err.Error(), pgsql.UnansweredKey) {
		return res, store.ErrUnanswered
	}
	if err != nil {
		return res, err
	}
	return res, pgcore.AfterClaim(ctx, d.core, db, l, res, v.key)
}

// EffectReadsMessages implements store.EffectReader: PostgreSQL's plan of
// the statements says whether they read new_messages.payload or .headers;
// true when it cannot be planned.
func (d *Driver) EffectReadsMessages(ctx context.Context, statements []string) bool {
	return d.q.ReadsPayload(ctx, on(d.db), statements)
}

// CheckEffect implements store.EffectChecker: it prepares the claim
// statement of a declarative effect once, so that a mistake in the
// statements (a syntax error, an unknown table or column) shows before
// the first batch.
func (d *Driver) CheckEffect(ctx context.Context, statements []string) error {
	stmt, err := d.db.PrepareContext(ctx, pgsql.EffectClaim(d.t, statements, pgsql.EffectForm{Classify: true, Payload: true}))
	if err != nil {
		return fmt.Errorf("pgdbstore: the effect's statements: %w", err)
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	d.q.ReadsPayload(ctx, on(d.db), statements)
	return nil
}

// JoinsEffects implements store.EffectChecker: a declarative effect runs
// on the unpartitioned layout only.
func (d *Driver) JoinsEffects(ctx context.Context) (bool, error) {
	partitioned, err := d.Partitioned(ctx)
	return err == nil && !partitioned, err
}
