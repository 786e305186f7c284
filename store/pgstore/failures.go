package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

// RecordFailures counts the failed attempts and dead-letters the rows that
// reached maxAttempts, in one short transaction of its own.
func (d *Driver) RecordFailures(ctx context.Context, rows []store.FailureRow, maxAttempts int) ([]store.FailureResult, error) {
	res := make([]store.FailureResult, len(rows))
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		n := len(rows)
		scopes, ids, errs, at := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
		index := make(map[store.Key]int, n)
		for i, r := range rows {
			scopes[i], ids[i], errs[i], at[i] = r.Scope, r.MessageID, r.Error, r.FailedAt
			index[r.Key] = i
		}
		rs, err := tx.Query(ctx, d.q.Failures, scopes, ids, errs, at)
		if err != nil {
			return err
		}
		var k store.Key
		var attempts int
		if _, err := pgx.ForEachRow(rs, []any{&k.Scope, &k.MessageID, &attempts}, func() error {
			i, ok := index[k]
			if !ok {
				return fmt.Errorf("pgstore: attempts returned unknown key %q/%q", k.Scope, k.MessageID)
			}
			res[i].Attempts = attempts
			return nil
		}); err != nil {
			return err
		}
		var dead []store.DeadLetterRow
		var committed []int
		for i, r := range rows {
			if res[i].Attempts == 0 { // not returned: the key is in the inbox
				res[i].Committed = true
				committed = append(committed, i)
				continue
			}
			if r.Permanent || res[i].Attempts >= maxAttempts {
				res[i].DeadLettered = true
				dl := r.DeadLetter
				dl.Attempts = res[i].Attempts
				dead = append(dead, dl)
			}
		}
		if err := d.failureDrift(ctx, tx, rows, res, committed); err != nil {
			return err
		}
		return insertDeadLetters(ctx, tx, &d.q, dead)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// failureDrift writes the drift rows of the failed rows at committed
// whose key another delivery committed with another payload (rare: one
// more statement only then).
func (d *Driver) failureDrift(ctx context.Context, tx pgx.Tx, rows []store.FailureRow, res []store.FailureResult, committed []int) error {
	if len(committed) == 0 {
		return nil
	}
	scopes, ids := make([]string, len(committed)), make([]string, len(committed))
	for j, i := range committed {
		scopes[j], ids[j] = rows[i].Scope, rows[i].MessageID
	}
	lookup := d.q.Lookup
	if l, err := d.layoutOf(ctx); err != nil {
		return err
	} else if l.partitioned {
		lookup = d.q.LookupPartitioned
	}
	rs, err := tx.Query(ctx, lookup, scopes, ids)
	if err != nil {
		return err
	}
	var drift []store.DriftRow
	var ord int
	var hash, dead []byte
	if _, err := pgx.ForEachRow(rs, []any{&ord, &hash, &dead}, func() error {
		if ord < 1 || ord > len(committed) {
			return fmt.Errorf("pgstore: lookup returned ordinal %d for %d keys", ord, len(committed))
		}
		i := committed[ord-1]
		if dr, ok := store.FailureDrift(rows[i], hash); ok && hash != nil {
			res[i].Drift = true
			drift = append(drift, dr)
		}
		return nil
	}); err != nil || len(drift) == 0 {
		return err
	}
	return insertDrift(ctx, tx, &d.q, drift)
}

func insertDeadLetters(ctx context.Context, tx pgx.Tx, q *queries, rows []store.DeadLetterRow) error {
	if len(rows) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		b.Queue(q.DeadLetter, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey,
			nonNil(r.Payload), r.PayloadHash, string(r.HeadersJSON), r.Attempts, r.Reason, r.LastError,
			r.ReceivedAt, r.DeadLetteredAt)
	}
	return tx.SendBatch(ctx, b).Close()
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Checkpoints returns the saved position of each partition of source.
func (d *Driver) Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error) {
	rows, _ := d.pool.Query(ctx, d.q.Checkpoints, scope, source)
	out := map[int32]int64{}
	var text string
	var pos int64
	_, err := pgx.ForEachRow(rows, []any{&text, &pos}, func() error {
		part, err := store.ParsePartition(text)
		if err != nil {
			return err
		}
		out[part] = pos
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
