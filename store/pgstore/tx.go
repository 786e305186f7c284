package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
)

// pgTx begins lazily: when its first statement is the claim, the BEGIN
// travels in the same round trip (pgx.Batch.BeginTx), so a batch costs
// one round trip less.
type pgTx struct {
	pool   *pgxpool.Pool
	tx     pgx.Tx // nil until begun
	q      *queries
	layout *layout
}

// Tx returns the open transaction; the processor calls it only after the
// claim began it.
func (t *pgTx) Tx() pgx.Tx { return t.tx }

// begin starts the transaction if no statement did yet.
func (t *pgTx) begin(ctx context.Context) error {
	if t.tx != nil {
		return nil
	}
	tx, err := t.pool.Begin(ctx)
	if err != nil {
		return err
	}
	t.tx = tx
	if t.layout.partitioned {
		// Taken before any savepoint: a lock taken inside one would be
		// released by ROLLBACK TO SAVEPOINT.
		_, err = tx.Exec(ctx, lockPeriodShared, t.layout.periodLock)
	}
	return err
}

func (t *pgTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	n := len(rows)
	scopes, ids := make([]string, n), make([]string, n)
	sources, positions, pkeys := make([]string, n), make([]string, n), make([]string, n)
	hashes, received := make([][]byte, n), make([]time.Time, n)
	index := make(map[store.Key]int, n)
	for i, r := range rows {
		scopes[i], ids[i], sources[i], positions[i], pkeys[i] = r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey
		hashes[i], received[i] = r.PayloadHash, r.ReceivedAt
		index[r.Key] = i
	}
	res := make([]store.ClaimResult, n)
	inserted, err := t.claimed(ctx, index, res, scopes, ids, sources, positions, pkeys, hashes, received)
	if err != nil || inserted == n {
		return res, err
	}
	return res, t.lookup(ctx, res, scopes, ids)
}

// claimed runs the claim statement, beginning the transaction in the same
// round trip if it is the first statement, and marks the inserted rows
// ClaimNew.
func (t *pgTx) claimed(ctx context.Context, index map[store.Key]int, res []store.ClaimResult, args ...any) (int, error) {
	inserted := 0
	scan := func(rs pgx.Rows) error {
		var err error
		inserted, err = t.markInserted(rs, index, res)
		return err
	}
	claim := t.q.claim
	if t.layout.partitioned {
		claim = t.q.claimPartitioned
	}
	if t.tx != nil {
		rs, err := t.tx.Query(ctx, claim, args...)
		if err != nil {
			return 0, err
		}
		return inserted, scan(rs)
	}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	if t.layout.partitioned {
		// Same round trip; the claim's own snapshot is taken after the
		// lock is granted (partition.go).
		b.Queue(lockPeriodShared, t.layout.periodLock)
	}
	b.Queue(claim, args...).Query(scan)
	br := t.pool.SendBatch(ctx, b)
	t.tx = br.Tx() // rolled back (or closed) by the caller on error
	return inserted, br.Close()
}

func (t *pgTx) markInserted(rs pgx.Rows, index map[store.Key]int, res []store.ClaimResult) (int, error) {
	var k store.Key
	inserted := 0
	_, err := pgx.ForEachRow(rs, []any{&k.Scope, &k.MessageID}, func() error {
		i, ok := index[k]
		if !ok {
			return fmt.Errorf("pgstore: claim returned unknown key %q/%q", k.Scope, k.MessageID)
		}
		res[i].Status = store.ClaimNew
		inserted++
		return nil
	})
	return inserted, err
}

// lookup fills in the rows the claim did not insert; only those are looked
// up, each index probe costs as much as an insert's.
func (t *pgTx) lookup(ctx context.Context, res []store.ClaimResult, scopes, ids []string) error {
	var at []int // at[j] is the index in res of the j-th key looked up
	var lscopes, lids []string
	for i := range res {
		if res[i].Status != store.ClaimNew {
			at, lscopes, lids = append(at, i), append(lscopes, scopes[i]), append(lids, ids[i])
		}
	}
	lookup := t.q.lookup
	if t.layout.partitioned {
		lookup = t.q.lookupPartitioned
	}
	rs, err := t.tx.Query(ctx, lookup, lscopes, lids)
	if err != nil {
		return err
	}
	var ord int
	var hash []byte
	var dead bool
	_, err = pgx.ForEachRow(rs, []any{&ord, &hash, &dead}, func() error {
		i := at[ord-1]
		switch r := &res[i]; {
		case hash != nil:
			r.Status, r.StoredHash = store.ClaimExisting, append([]byte(nil), hash...)
		case dead:
			r.Status = store.ClaimDeadLettered
		default:
			return fmt.Errorf("%w: %q/%q", store.ErrClaimRace, scopes[i], ids[i])
		}
		return nil
	})
	return err
}

func (t *pgTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	n := len(rows)
	scopes, ids, sources, positions := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	stored, received, at := make([][]byte, n), make([][]byte, n), make([]time.Time, n)
	for i, r := range rows {
		scopes[i], ids[i], sources[i], positions[i] = r.Scope, r.MessageID, r.Source, r.SourcePosition
		stored[i], received[i], at[i] = r.StoredHash, r.ReceivedHash, r.DetectedAt
	}
	_, err := t.tx.Exec(ctx, t.q.drift, scopes, ids, sources, positions, stored, received, at)
	return err
}

func (t *pgTx) Savepoint(ctx context.Context) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, "SAVEPOINT txinbox_message")
	return err
}

func (t *pgTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	return err
}

func (t *pgTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, "RELEASE SAVEPOINT txinbox_message")
	return err
}

// Commit commits; a transaction that never began has nothing to commit.
func (t *pgTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit(ctx)
}

// Rollback rolls back; a transaction that never began has nothing to undo.
func (t *pgTx) Rollback(ctx context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Rollback(ctx)
}

func (t *pgTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return insertDeadLetters(ctx, t.tx, t.q, rows)
}

func (t *pgTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, t.q.checkpoint, cp.Scope, cp.Source, cp.Partition, cp.Position)
	return err
}
