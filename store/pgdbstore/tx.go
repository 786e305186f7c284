package pgdbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/internal/sqldb"
)

// dbTx is a batch transaction: a *sql.Tx on a connection it holds until
// it ends (sqldb.Batch), so that Check can read the connection's state.
type dbTx struct {
	d      *Driver
	b      *sqldb.Batch
	q      querier
	layout *pgcore.Layout
	// plan is the checkpoint the claim saves, if planned; saved is it
	// once the claim saved it.
	plan, saved *store.Checkpoint
	// armed is set once a statement armed the commit guard (the claim,
	// AdvanceCheckpoint): only then may a handler have run, and only then
	// must the commit pass the guard.
	armed bool
	// marked is set once pgsql.MarkBatch's setting was made outside any
	// savepoint (by the claim, or by Savepoint), where no ROLLBACK TO
	// SAVEPOINT undoes it; inSavepoint while the message's savepoint is
	// set.
	marked, inSavepoint bool
	// ended is set once the transaction ended (Commit, Rollback); lost
	// once Check found it gone (a handler ended it, or its connection).
	ended, lost bool
}

var (
	_ store.CheckpointPlanner  = (*dbTx)(nil)
	_ store.CheckpointAdvancer = (*dbTx)(nil)
)

// Begin begins a batch transaction (READ COMMITTED, the default) on a
// connection of its own: one round trip (database/sql sends the BEGIN on
// its own), and the read-only guard's one or two (roguard.go). On the
// partitioned layout, a second takes the period lock
// (see pgstore's partition.go for why).
func (d *Driver) Begin(ctx context.Context) (store.Tx[*sql.Tx], error) {
	l, err := pgcore.LayoutOf(ctx, d.core)
	if err != nil {
		return nil, err
	}
	b, err := sqldb.Begin(ctx, d.db, nil, d.session)
	if err != nil {
		return nil, err
	}
	t := &dbTx{d: d, b: b, q: on(b.Tx), layout: l}
	if l.Partitioned {
		if _, err := b.Tx.ExecContext(ctx, pgcore.LockPeriodShared, l.PeriodLock); err != nil {
			return nil, errors.Join(err, b.End())
		}
	}
	return t, nil
}

// Tx returns the transaction handed to handlers: the *sql.Tx itself
// (database/sql lets nothing stand between it and the handler).
func (t *dbTx) Tx() *sql.Tx { return t.b.Tx }

// PlanCheckpoint implements store.CheckpointPlanner: the claim saves cp
// (plain layout).
func (t *dbTx) PlanCheckpoint(cp store.Checkpoint) {
	if !t.layout.Partitioned {
		t.plan = &cp
	}
}

// RecordDrift inserts the drift rows in the transaction.
func (t *dbTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	return pgcore.InsertDrift(ctx, t.d.core, t.q, rows)
}

// DeadLetter inserts the dead letters in the transaction.
func (t *dbTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	return pgcore.InsertDeadLetters(ctx, t.d.core, t.q, rows)
}

// SaveCheckpoint saves cp, unless the claim already saved it.
func (t *dbTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	if t.saved != nil {
		if *t.saved == cp {
			return nil // the claim saved it
		}
		return fmt.Errorf("pgdbstore: the claim saved checkpoint %d of %s/%d, the batch ends at %d", t.saved.Position,
			cp.Source, cp.Partition, cp.Position)
	}
	_, err := t.b.Tx.ExecContext(ctx, t.d.q.Checkpoint, pgcore.CheckpointArgs(&cp)...)
	return err
}

// AdvanceCheckpoint implements store.CheckpointAdvancer; as the first
// statement of the transaction it arms the commit guard, as Claim does.
func (t *dbTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	var n int64
	t.arm()
	args := append(pgcore.CheckpointArgs(&cp), previous)
	err := t.b.Tx.QueryRowContext(ctx, t.d.q.Advance, args...).Scan(&n)
	return n == 1, err
}

// arm notes a statement that arms the commit guard, and marks the
// transaction (pgsql.GuardMarkCTE).
func (t *dbTx) arm() {
	t.armed = true
	if !t.inSavepoint {
		t.marked = true
	}
}

// Savepoint sets the message's savepoint; the first one also marks the
// transaction, in the same round trip, if the claim did not yet outside
// a savepoint.
func (t *dbTx) Savepoint(ctx context.Context) error {
	sql := "SAVEPOINT txinbox_message"
	if !t.marked {
		sql = pgsql.MarkBatch + "; " + sql
	}
	_, err := t.b.Tx.ExecContext(ctx, sql)
	if err == nil {
		t.marked, t.inSavepoint = true, true
	}
	return err
}

// RollbackToSavepoint undoes the message's work.
func (t *dbTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	t.inSavepoint = false
	return err
}

// ReleaseSavepoint releases the message's savepoint; when it is gone (a
// handler ended the transaction and began another: ROLLBACK AND CHAIN as
// SQL), the error is a *store.BrokenTxError, Lost.
func (t *dbTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "RELEASE SAVEPOINT txinbox_message")
	t.inSavepoint = false
	if pgcore.SQLState(err) == "3B001" {
		return &store.BrokenTxError{Lost: true, Reason: "it ended the batch transaction and began another (ROLLBACK AND CHAIN as SQL?)"}
	}
	return err
}

// Commit passes the commit guard (pgsql.CommitSetting, which also checks
// that the transaction is still the batch's), then commits: two round
// trips, database/sql sending the COMMIT on its own.
func (t *dbTx) Commit(ctx context.Context) error {
	if t.ended {
		return nil
	}
	t.ended = true
	if !t.armed {
		return errors.Join(t.b.Tx.Commit(), t.b.End())
	}
	commit := pgsql.CommitSetting
	if t.b.Reset != "" {
		commit = guardCommit
	}
	if _, err := t.b.Tx.ExecContext(ctx, commit); err != nil {
		if pgcore.IsNotBatchTx(err) {
			err = &store.BrokenTxError{Lost: true,
				Reason: "a handler ended the batch transaction (ROLLBACK AND CHAIN as SQL?): nothing committed"}
		}
		return errors.Join(err, t.b.End())
	}
	err := t.b.Tx.Commit()
	if err == nil {
		t.b.Reset = "" // the commit turned the guard off
	}
	return errors.Join(err, t.b.End())
}

// Rollback rolls back, also a transaction a handler ended, and gives the
// connection back.
func (t *dbTx) Rollback(context.Context) error {
	if t.ended {
		return nil
	}
	t.ended = true
	err := t.b.End()
	if t.lost {
		return nil // nothing to roll back (lib/pq says so, pgx does not)
	}
	return err
}
