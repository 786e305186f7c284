package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
)

// Claim claims the rows' keys in one statement (the transaction's first
// round trip, with its BEGIN, when it is the first) and answers for each
// key: inserted, or the hashes stored for it.
func (t *pgTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	v := viewClaimRows(rows)
	args := newClaimArgs(v)
	res := make([]store.ClaimResult, len(rows))
	claim, classify := t.q.Claim, t.q.ClaimClassify
	plan := t.takePlan()
	if plan != nil {
		claim, classify = t.q.ClaimCP, t.q.ClaimClassifyCP
		args = append(args, pgcore.CheckpointArgs(plan)...)
	}
	var err error
	switch {
	case t.layout.Partitioned:
		err = t.claimed(ctx, t.q.ClaimPartitioned, markInserted(v, res), args...)
	case t.q.Duplicates.Load() && pgcore.Distinct(v.n, v.key):
		err = t.claimed(ctx, classify, classifyClaimed(res), args...)
	default:
		err = t.claimed(ctx, claim, markInserted(v, res), args...)
	}
	if err != nil {
		return res, err
	}
	t.saved = plan
	return t.afterClaim(ctx, res, v)
}

// takePlan returns the planned checkpoint (PlanCheckpoint) for the claim
// to save in its statement, nil if none was planned or the transaction
// began before the claim; either way the plan is used up. The claim sets
// t.saved to it once it succeeded.
func (t *pgTx) takePlan() *store.Checkpoint {
	plan := t.plan
	t.plan = nil
	if t.tx != nil {
		return nil
	}
	return plan
}

// newClaimArgs are a claim's parameters $1-$7 (pgsql.BatchRows): columns of v,
// read in place; a column with one value throughout goes as that one
// value.
func newClaimArgs(v claimView) []any {
	text := func(field func(*store.ClaimRow) *string, compact bool) textColumn {
		n := v.n
		if compact {
			n = v.length(func(a, b *store.ClaimRow) bool { return *field(a) == *field(b) })
		}
		return textColumn{v: v, n: n, field: field}
	}
	return []any{
		text(func(r *store.ClaimRow) *string { return &r.Scope }, true),
		text(func(r *store.ClaimRow) *string { return &r.MessageID }, false),
		text(func(r *store.ClaimRow) *string { return &r.Source }, true),
		text(func(r *store.ClaimRow) *string { return &r.SourcePosition }, true),
		text(func(r *store.ClaimRow) *string { return &r.PartitionKey }, true),
		hashColumn{v},
		// The database keeps no location: equal instants are one value.
		receivedColumn{v, v.length(func(a, b *store.ClaimRow) bool { return a.ReceivedAt.Equal(b.ReceivedAt) })},
	}
}

// afterClaim chooses the next claim and looks up the keys the claim left
// unanswered (pgcore.AfterClaim).
func (t *pgTx) afterClaim(ctx context.Context, res []store.ClaimResult, v claimView) ([]store.ClaimResult, error) {
	return res, pgcore.AfterClaim(ctx, t.d.core, t.querier(), t.layout, res, v.key)
}

// claimed runs a claim statement, beginning the transaction in the same
// round trip if it is the first statement, and hands its rows to scan.
func (t *pgTx) claimed(ctx context.Context, claim string, scan func(pgx.Rows) error, args ...any) error {
	if t.tx != nil {
		rs, err := t.tx.Query(ctx, claim, args...)
		if err != nil {
			return err
		}
		return scan(rs)
	}
	b := t.firstBatch()
	if t.layout.Partitioned {
		// Same round trip; the claim's own snapshot is taken after the
		// lock is granted (partition.go).
		b.Queue(pgcore.LockPeriodShared, t.layout.PeriodLock)
	}
	b.Queue(claim, args...).Query(scan)
	return t.sendFirst(ctx, b)
}

// sendFirst sends b, the transaction's first round trip (it begins with
// pgx.Batch.BeginTx), on a connection the transaction holds until it
// ends, and closes its results.
func (t *pgTx) sendFirst(ctx context.Context, b *pgx.Batch) error {
	c, err := t.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	t.conn = c
	br := c.SendBatch(ctx, b)
	t.tx = br.Tx() // rolled back (or closed) by the caller on error
	return movedError(br.Close())
}

// classifyClaimed scans a claim ending in pgsql.ClassifySelect: one row per
// key it did not insert, with its ordinal and the stored hashes its
// snapshot saw (a key with neither stays unanswered, for the lookup);
// the keys it does not return were inserted.
func classifyClaimed(res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		for i := range res {
			res[i].Status = store.ClaimNew
		}
		var ord int
		var hash, dead []byte
		_, err := pgx.ForEachRow(rs, []any{&ord, &hash, &dead}, func() error {
			if ord < 1 || ord > len(res) {
				return fmt.Errorf("pgstore: claim returned ordinal %d for a batch of %d", ord, len(res))
			}
			r := &res[ord-1]
			r.Status = 0
			pgcore.ClassifySeen(r, hash, dead)
			return nil
		})
		return err
	}
}

// markInserted scans a claim that returns the keys it inserted, and marks
// them ClaimNew. The keys are found by binary search over the batch's
// order sorted by key, compared with the result's bytes in place: no
// string or map entry per row.
func markInserted(v claimView, res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		defer rs.Close()
		order := make([]int32, v.n)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return compareKeys(v.key(int(a)), v.key(int(b))) })
		for rs.Next() {
			raw := rs.RawValues()
			if len(raw) != 2 || raw[0] == nil || raw[1] == nil {
				return fmt.Errorf("pgstore: claim returned %d values, want a scope and a message id", len(raw))
			}
			k := store.Key{Scope: inPlace(raw[0]), MessageID: inPlace(raw[1])}
			j, ok := slices.BinarySearchFunc(order, k, func(e int32, k store.Key) int { return compareKeys(v.key(int(e)), k) })
			if !ok {
				return fmt.Errorf("pgstore: claim returned unknown key %q/%q", k.Scope, k.MessageID)
			}
			res[order[j]].Status = store.ClaimNew
		}
		return rs.Err()
	}
}

func compareKeys(a, b store.Key) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	return strings.Compare(a.MessageID, b.MessageID)
}

// inPlace is b as a string without a copy, valid only while b is: a
// result's bytes, until the next row.
func inPlace(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// markOrdinals marks the rows whose 1-based ordinals the claim returns as
// inserted.
func markOrdinals(res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		var ord int64
		_, err := pgx.ForEachRow(rs, []any{&ord}, func() error {
			if ord < 1 || ord > int64(len(res)) {
				return fmt.Errorf("pgstore: claim returned ordinal %d of a batch of %d", ord, len(res))
			}
			res[ord-1].Status = store.ClaimNew
			return nil
		})
		return err
	}
}

// querier is the transaction as a pgcore.Querier, or the pool before it
// began and after an autocommitted claim (CommitEffect).
func (t *pgTx) querier() pgcore.Querier {
	if t.tx != nil {
		return onTx(t.tx)
	}
	return pgxQuerier[*pgxpool.Pool]{t.pool}
}
