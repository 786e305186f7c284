package pgdbstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
)

// Claim claims the rows' keys in one statement and answers for each key:
// inserted, or the hashes stored for it (pgstore's statements, with the
// batch as array literals).
func (t *dbTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	v := view{n: len(rows), row: func(i int) *store.ClaimRow { return &rows[i] }}
	args := claimArgs(v)
	res := make([]store.ClaimResult, len(rows))
	q := t.d.q
	claim, classify := q.Claim, q.ClaimClassify
	plan := t.plan
	t.plan = nil
	if plan != nil {
		claim, classify = q.ClaimCP, q.ClaimClassifyCP
		args = append(args, pgcore.CheckpointArgs(plan)...)
	}
	var err error
	switch {
	case t.layout.Partitioned:
		err = t.claimed(ctx, q.ClaimPartitioned, markInserted(v, res), args)
	case q.Duplicates.Load() && pgcore.Distinct(v.n, v.key):
		err = t.claimed(ctx, classify, classifyClaimed(res), args)
	default:
		err = t.claimed(ctx, claim, markInserted(v, res), args)
	}
	if err != nil {
		return res, err
	}
	t.saved = plan
	return res, pgcore.AfterClaim(ctx, t.d.core, t.q, t.layout, res, v.key)
}

// claimed runs a claim statement in the transaction and hands its rows
// to scan.
func (t *dbTx) claimed(ctx context.Context, claim string, scan func(*sql.Rows) error, args []any) error {
	t.arm()
	return scanned(t.b.Tx.QueryContext(ctx, claim, args...))(scan)
}

// scanned closes rows after scan, reporting the first error.
func scanned(rows *sql.Rows, err error) func(func(*sql.Rows) error) error {
	return func(scan func(*sql.Rows) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
		return rows.Err()
	}
}

// view is a claim's batch read in place: row(i) is the i-th ClaimRow of
// a []store.ClaimRow or of a []store.EffectRow.
type view struct {
	n   int
	row func(int) *store.ClaimRow
}

func (v view) key(i int) store.Key { return v.row(i).Key }

// same reports whether every row's field equals the first row's: the
// column then goes as an array of that one value (pgsql.BatchSelect pads
// it back).
func (v view) same(equal func(a, b *store.ClaimRow) bool) bool {
	for i := 1; i < v.n; i++ {
		if !equal(v.row(0), v.row(i)) {
			return false
		}
	}
	return true
}

// claimArgs are a claim's parameters $1-$7 (pgsql.BatchRows): array
// literals of v's columns, a column of one value throughout as that one
// value.
func claimArgs(v view) []any {
	text := func(field func(*store.ClaimRow) string, compact bool) string {
		n := v.n
		if compact && v.same(func(a, b *store.ClaimRow) bool { return field(a) == field(b) }) {
			n = min(1, v.n)
		}
		return pgcore.ArrayLiteral(n, func(b *strings.Builder, i int) bool { pgcore.QuoteElem(b, field(v.row(i))); return true })
	}
	received := v.n
	if v.same(func(a, b *store.ClaimRow) bool { return a.ReceivedAt.Equal(b.ReceivedAt) }) {
		received = min(1, v.n)
	}
	return []any{
		text(func(r *store.ClaimRow) string { return r.Scope }, true),
		text(func(r *store.ClaimRow) string { return r.MessageID }, false),
		text(func(r *store.ClaimRow) string { return r.Source }, true),
		text(func(r *store.ClaimRow) string { return r.SourcePosition }, true),
		text(func(r *store.ClaimRow) string { return r.PartitionKey }, true),
		pgcore.ArrayLiteral(v.n, func(b *strings.Builder, i int) bool {
			h := v.row(i).PayloadHash
			if h == nil {
				return false
			}
			pgcore.ByteaElem(b, h)
			return true
		}),
		pgcore.ArrayLiteral(received, func(b *strings.Builder, i int) bool { pgcore.TimeElem(b, v.row(i).ReceivedAt); return true }),
	}
}

// markInserted scans a claim that returns the keys it inserted and marks
// them ClaimNew, found by binary search over the batch sorted by key,
// compared with the result's bytes in place (sql.RawBytes).
func markInserted(v view, res []store.ClaimResult) func(*sql.Rows) error {
	return func(rs *sql.Rows) error {
		order := make([]int32, v.n)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return compareKeys(v.key(int(a)), v.key(int(b))) })
		var scope, id sql.RawBytes
		for rs.Next() {
			if err := rs.Scan(&scope, &id); err != nil {
				return err
			}
			k := store.Key{Scope: inPlace(scope), MessageID: inPlace(id)}
			j, ok := slices.BinarySearchFunc(order, k, func(e int32, k store.Key) int { return compareKeys(v.key(int(e)), k) })
			if !ok {
				return fmt.Errorf("pgdbstore: claim returned unknown key %q/%q", k.Scope, k.MessageID)
			}
			res[order[j]].Status = store.ClaimNew
		}
		return nil
	}
}

func compareKeys(a, b store.Key) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	return strings.Compare(a.MessageID, b.MessageID)
}

// inPlace is b as a string without a copy, valid only while b is.
func inPlace(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// classifyClaimed scans a claim ending in pgsql.ClassifySelect: one row per
// key it did not insert, with its ordinal and the stored hashes its
// snapshot saw (a key with neither stays unanswered, for the lookup);
// the keys it does not return were inserted.
func classifyClaimed(res []store.ClaimResult) func(*sql.Rows) error {
	return func(rs *sql.Rows) error {
		for i := range res {
			res[i].Status = store.ClaimNew
		}
		var ord int
		var hash, dead []byte
		for rs.Next() {
			if err := rs.Scan(&ord, &hash, &dead); err != nil {
				return err
			}
			if ord < 1 || ord > len(res) {
				return fmt.Errorf("pgdbstore: claim returned ordinal %d for a batch of %d", ord, len(res))
			}
			r := &res[ord-1]
			r.Status = 0
			pgcore.ClassifySeen(r, hash, dead)
		}
		return nil
	}
}

// markOrdinals marks the rows whose 1-based ordinals the claim returns as
// inserted.
func markOrdinals(res []store.ClaimResult) func(*sql.Rows) error {
	return func(rs *sql.Rows) error {
		var ord int64
		for rs.Next() {
			if err := rs.Scan(&ord); err != nil {
				return err
			}
			if ord < 1 || ord > int64(len(res)) {
				return fmt.Errorf("pgdbstore: claim returned ordinal %d of a batch of %d", ord, len(res))
			}
			res[ord-1].Status = store.ClaimNew
		}
		return nil
	}
}
