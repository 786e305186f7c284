package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// claimChunk keeps a claim statement under SQLite's limit of bound
// parameters (7 per row).
const claimChunk = 1000

type queries struct {
	t schema.Tables
}

func newQueries(t schema.Tables) queries { return queries{t: t} }

// claimSQL claims n rows with one statement; keys already dead-lettered are
// skipped. The WHERE clause also resolves SQLite's parsing ambiguity between
// INSERT ... SELECT and ON CONFLICT.
func (q *queries) claimSQL(n int) string {
	return q.t.Expand(`INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT column1, column2, column3, column4, column5, column6, column7, ? FROM (VALUES ` + values(n, 7) + `) AS m
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.column1 AND d.message_id = m.column2 AND d.message_id <> '')
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING scope, message_id`)
}

func (q *queries) lookupSQL(n int) string {
	return q.t.Expand(`SELECT m.column1, m.column2, i.payload_hash, d.payload_hash
FROM (VALUES ` + values(n, 2) + `) AS m
LEFT JOIN {inbox} i ON i.scope = m.column1 AND i.message_id = m.column2
LEFT JOIN {dead_letters} d ON d.scope = m.column1 AND d.message_id = m.column2 AND d.message_id <> ''`)
}

// values returns "(?,?),(?,?)" for n rows of cols placeholders.
func values(n, cols int) string {
	row := "(" + strings.Repeat("?,", cols-1) + "?)"
	return strings.Repeat(row+",", n-1) + row
}

type sqliteTx struct {
	conn *sql.Conn
	tx   *sql.Tx
	g    *guard
	q    *queries
}

func (t *sqliteTx) Tx() *sql.Tx { return t.tx }

func (t *sqliteTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	res := make([]store.ClaimResult, len(rows))
	for start := 0; start < len(rows); start += claimChunk {
		end := min(start+claimChunk, len(rows))
		if err := t.claim(ctx, rows[start:end], res[start:end]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (t *sqliteTx) claim(ctx context.Context, rows []store.ClaimRow, res []store.ClaimResult) error {
	index := make(map[store.Key]int, len(rows))
	args := make([]any, 0, 7*len(rows)+1)
	args = append(args, formatTime(time.Now())) // processed_at
	for i, r := range rows {
		index[r.Key] = i
		args = append(args, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey, r.PayloadHash, formatTime(r.ReceivedAt))
	}
	inserted, err := t.scanKeys(ctx, t.q.claimSQL(len(rows)), args, func(i int) { res[i].Status = store.ClaimNew }, index)
	if err != nil || inserted == len(rows) {
		return err
	}
	return t.lookup(ctx, rows, res, index)
}

func (t *sqliteTx) scanKeys(ctx context.Context, query string, args []any, mark func(int), index map[store.Key]int) (int, error) {
	rs, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		var k store.Key
		if err := rs.Scan(&k.Scope, &k.MessageID); err != nil {
			return n, err
		}
		i, ok := index[k]
		if !ok {
			return n, fmt.Errorf("sqlitestore: claim returned unknown key %q/%q", k.Scope, k.MessageID)
		}
		mark(i)
		n++
	}
	return n, rs.Err()
}

func (t *sqliteTx) lookup(ctx context.Context, rows []store.ClaimRow, res []store.ClaimResult, index map[store.Key]int) error {
	args := make([]any, 0, 2*len(rows))
	for _, r := range rows {
		args = append(args, r.Scope, r.MessageID)
	}
	rs, err := t.tx.QueryContext(ctx, t.q.lookupSQL(len(rows)), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var k store.Key
		var hash, dead []byte
		if err := rs.Scan(&k.Scope, &k.MessageID, &hash, &dead); err != nil {
			return err
		}
		r := &res[index[k]]
		switch {
		case r.Status == store.ClaimNew:
		case hash != nil:
			r.Status, r.StoredHash = store.ClaimExisting, hash
		case dead != nil:
			r.Status, r.StoredHash = store.ClaimDeadLettered, dead
		default:
			return fmt.Errorf("%w: %q/%q", store.ErrClaimRace, k.Scope, k.MessageID)
		}
	}
	return rs.Err()
}

func (t *sqliteTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	return insertDrift(ctx, t.tx, t.q.t, rows)
}

func insertDrift(ctx context.Context, tx *sql.Tx, tables schema.Tables, rows []store.DriftRow) error {
	stmt := tables.Expand(`INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`)
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, stmt, r.Scope, r.MessageID, r.Source, r.SourcePosition,
			r.StoredHash, r.ReceivedHash, formatTime(r.DetectedAt)); err != nil {
			return err
		}
	}
	return nil
}

func (t *sqliteTx) Savepoint(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, "SAVEPOINT txinbox_message")
	return err
}

func (t *sqliteTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	return err
}

func (t *sqliteTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, "RELEASE SAVEPOINT txinbox_message")
	return err
}

// Commit commits through the guard and gives the connection back.
func (t *sqliteTx) Commit(context.Context) error {
	if t.conn == nil {
		return sql.ErrTxDone
	}
	t.g.own.Store(true)
	err := t.tx.Commit()
	t.release()
	return err
}

// Rollback rolls back, also a transaction whose *sql.Tx a handler ended,
// and gives the connection back.
func (t *sqliteTx) Rollback(ctx context.Context) error {
	if t.conn == nil {
		return sql.ErrTxDone
	}
	t.g.own.Store(true)
	err := t.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		// A handler's tx.Commit or tx.Rollback: the guard refused the
		// COMMIT, so the connection may still be inside the
		// transaction; end it (an error says it was not).
		_, _ = t.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		err = nil
	}
	t.release()
	return err
}

func (t *sqliteTx) release() {
	t.g.disarm()
	t.conn.Close()
	t.conn = nil
}

// Check reports what the guard saw during the handler.
func (t *sqliteTx) Check(error) error { return t.g.check() }

func (t *sqliteTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	return insertDeadLetters(ctx, t.tx, t.q.t, rows)
}

func (t *sqliteTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	_, err := t.tx.ExecContext(ctx, t.q.t.Expand(`INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = max(c.position, excluded.position), updated_at = excluded.updated_at`),
		cp.Scope, cp.Source, cp.PartitionText(), cp.Position, formatTime(time.Now()))
	return err
}
