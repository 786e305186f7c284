package pgcore

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/store"
)

// RecordFailures counts the failed attempts and dead-letters the rows that
// reached maxAttempts, in one short transaction of its own.
func (c *Core) RecordFailures(ctx context.Context, rows []store.FailureRow, maxAttempts int) ([]store.FailureResult, error) {
	res := make([]store.FailureResult, len(rows))
	err := c.db.InTx(ctx, func(tx Querier) error {
		if err := c.countAttempts(ctx, tx, rows, res); err != nil {
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
		if err := c.failureDrift(ctx, tx, rows, res, committed); err != nil {
			return err
		}
		return InsertDeadLetters(ctx, c, tx, dead)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// countAttempts counts one failed attempt for each row whose key the inbox
// does not hold, and sets its count in res.
func (c *Core) countAttempts(ctx context.Context, tx Querier, rows []store.FailureRow, res []store.FailureResult) error {
	n := len(rows)
	scopes, ids, errs, at := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	index := make(map[store.Key]int, n)
	for i, r := range rows {
		scopes[i], ids[i], errs[i], at[i] = r.Scope, r.MessageID, r.Error, r.FailedAt
		index[r.Key] = i
	}
	rs, err := tx.Query(ctx, c.q.Failures, scopes, ids, errs, at)
	var k store.Key
	var attempts int
	return ForEach(rs, err, []any{&k.Scope, &k.MessageID, &attempts}, func() error {
		i, ok := index[k]
		if !ok {
			return c.errf("attempts returned unknown key %q/%q", k.Scope, k.MessageID)
		}
		res[i].Attempts = attempts
		return nil
	})
}

// failureDrift writes the drift rows of the failed rows at committed
// whose key another delivery committed with another payload (rare: one
// more statement only then).
func (c *Core) failureDrift(ctx context.Context, tx Querier, rows []store.FailureRow, res []store.FailureResult, committed []int) error {
	if len(committed) == 0 {
		return nil
	}
	keys := make([]store.Key, len(committed))
	for j, i := range committed {
		keys[j] = rows[i].Key
	}
	l, err := c.layoutOf(ctx)
	if err != nil {
		return err
	}
	var drift []store.DriftRow
	err = Lookup(ctx, c, tx, l, keys, func(j int, hash, _ []byte) error {
		i := committed[j]
		if dr, ok := store.FailureDrift(rows[i], hash); ok && hash != nil {
			res[i].Drift = true
			drift = append(drift, dr)
		}
		return nil
	})
	if err != nil || len(drift) == 0 {
		return err
	}
	return InsertDrift(ctx, c, tx, drift)
}

// Lookup reads, for c, in a statement of its own (a new READ COMMITTED snapshot,
// which sees the rows of the transactions a claim waited for), the stored
// and dead-lettered payload hashes of keys, and calls fn with each key's
// index in keys.
func Lookup(ctx context.Context, c *Core, q Querier, l *Layout, keys []store.Key, fn func(i int, hash, dead []byte) error) error {
	scopes, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], ids[i] = k.Scope, k.MessageID
	}
	lookup := c.q.Lookup
	if l.Partitioned {
		lookup = c.q.LookupPartitioned
	}
	rs, err := q.Query(ctx, lookup, scopes, ids)
	var ord int
	var hash, dead []byte
	return ForEach(rs, err, []any{&ord, &hash, &dead}, func() error {
		if ord < 1 || ord > len(keys) {
			return c.errf("lookup returned ordinal %d for %d keys", ord, len(keys))
		}
		return fn(ord-1, hash, dead)
	})
}

// InsertDrift inserts drift rows in tx, c's.
func InsertDrift(ctx context.Context, c *Core, tx Querier, rows []store.DriftRow) error {
	n := len(rows)
	scopes, ids, sources, positions := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	stored, received, at := make([][]byte, n), make([][]byte, n), make([]time.Time, n)
	for i, r := range rows {
		scopes[i], ids[i], sources[i], positions[i] = r.Scope, r.MessageID, r.Source, r.SourcePosition
		stored[i], received[i], at[i] = r.StoredHash, r.ReceivedHash, r.DetectedAt
	}
	_, err := tx.Exec(ctx, c.q.Drift, scopes, ids, sources, positions, stored, received, at)
	return err
}

// InsertDeadLetters inserts dead letters in tx, c's, a statement each.
func InsertDeadLetters(ctx context.Context, c *Core, tx Querier, rows []store.DeadLetterRow) error {
	for _, r := range rows {
		if _, err := tx.Exec(ctx, c.q.DeadLetter, DeadLetterArgs(r)...); err != nil {
			return err
		}
	}
	return nil
}

// DeadLetterArgs are the parameters of Statements.DeadLetter for r.
func DeadLetterArgs(r store.DeadLetterRow) []any {
	payload := r.Payload
	if payload == nil {
		payload = []byte{}
	}
	return []any{r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey,
		payload, r.PayloadHash, string(r.HeadersJSON), r.Attempts, r.Reason, r.LastError,
		r.ReceivedAt, r.DeadLetteredAt}
}

// Checkpoints returns the saved position of each partition of source.
func (c *Core) Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error) {
	rows, err := c.db.Query(ctx, c.q.Checkpoints, scope, source)
	out := map[int32]int64{}
	var text string
	var pos int64
	err = ForEach(rows, err, []any{&text, &pos}, func() error {
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

// CheckpointArgs are the parameters of a checkpoint's row, in the order
// the statements that save one take them.
func CheckpointArgs(cp *store.Checkpoint) []any {
	return []any{cp.Scope, cp.Source, cp.PartitionText(), cp.Position}
}
