package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/sqldb"
	"github.com/txinbox/txinbox/store/schema"
)

// myTx is a batch transaction: an XA transaction (conn.go) on a
// connection held until it ends, so that Check reads the connection's
// state.
type myTx struct {
	d *Driver
	b *sqldb.Batch
	c *conn
	// claimID marks the inbox rows this transaction inserts.
	claimID int64
}

var _ store.CheckpointAdvancer = (*myTx)(nil)

// Begin begins a batch transaction at Options.Isolation on a connection
// of its own: SET TRANSACTION ISOLATION LEVEL and XA START, two round
// trips.
func (d *Driver) Begin(ctx context.Context) (store.Tx[*sql.Tx], error) {
	b, err := sqldb.Begin(context.WithValue(ctx, batchKey{}, true), d.db, &sql.TxOptions{Isolation: d.opts.Isolation}, sqldb.Session{})
	if err != nil {
		return nil, err
	}
	var c *conn
	_ = b.DriverConn(func(dc any) error { c, _ = dc.(*conn); return nil })
	if c == nil {
		return nil, errors.Join(errors.New("mysqlstore: the connection is not txinbox's (open the database with mysqlstore.Open)"), b.End())
	}
	return &myTx{d: d, b: b, c: c, claimID: rand.Int64N(1<<62) + 1}, nil
}

// Tx returns the transaction handed to handlers.
func (t *myTx) Tx() *sql.Tx { return t.b.Tx }

// claimChunk keeps a claim statement well under MySQL's 65,535
// placeholders (7 per row).
const claimChunk = 1000

// Claim claims the rows' keys: one INSERT ... SELECT ... ON DUPLICATE KEY
// UPDATE per chunk (a no-op update: the affected-row count is the number
// of rows inserted), in key order so that two batches lock shared keys in
// the same order. When it inserted fewer rows than it was given, one
// locking read of the chunk's keys tells the inserted (claim_id is this
// transaction's) from the stored and the dead-lettered ones.
func (t *myTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(rows[a].Scope, rows[b].Scope); c != 0 {
			return c
		}
		return strings.Compare(rows[a].MessageID, rows[b].MessageID)
	})
	res := make([]store.ClaimResult, len(rows))
	now := formatTime(time.Now())
	for start := 0; start < len(order); start += claimChunk {
		if err := t.claim(ctx, rows, order[start:min(start+claimChunk, len(order))], res, now); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (t *myTx) claim(ctx context.Context, rows []store.ClaimRow, idx []int, res []store.ClaimResult, now string) error {
	args := make([]any, 0, 2+7*len(idx))
	args = append(args, now, t.claimID)
	for _, i := range idx {
		r := &rows[i]
		args = append(args, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey, r.PayloadHash, formatTime(r.ReceivedAt))
	}
	ins, err := t.b.Tx.ExecContext(ctx, claimSQL(t.d.t, len(idx)), args...)
	if err != nil {
		return err
	}
	n, err := ins.RowsAffected()
	if err != nil {
		return err
	}
	if int(n) == len(idx) {
		for _, i := range idx {
			res[i].Status = store.ClaimNew
		}
		return nil
	}
	return t.lookup(ctx, rows, idx, res)
}

// claimSQL inserts n rows, skipping dead-lettered keys; the first two
// parameters are processed_at and claim_id.
func claimSQL(t schema.Tables, n int) string {
	var b strings.Builder
	b.WriteString(t.Expand(`INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, claim_id)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, ?, ? FROM (`))
	for i := range n {
		if i == 0 {
			b.WriteString("SELECT ? AS scope, ? AS message_id, ? AS source, ? AS source_position, ? AS partition_key, ? AS payload_hash, ? AS received_at")
			continue
		}
		b.WriteString(" UNION ALL SELECT ?, ?, ?, ?, ?, ?, ?")
	}
	b.WriteString(t.Expand(`) AS m
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.key_id = m.message_id)
ON DUPLICATE KEY UPDATE claim_id = {inbox}.claim_id`))
	return b.String()
}

// keysSQL is a derived table m of n keys with their ordinals, for a
// lookup: (ord, scope, message_id).
func keysSQL(n int) string {
	var b strings.Builder
	for i := range n {
		if i == 0 {
			b.WriteString("SELECT ? AS ord, ? AS scope, ? AS message_id")
			continue
		}
		b.WriteString(" UNION ALL SELECT ?, ?, ?")
	}
	return b.String()
}

// lookup reads, with a locking read (the newest committed rows, whatever
// the snapshot), what the inbox and the dead letters hold for the keys.
func (t *myTx) lookup(ctx context.Context, rows []store.ClaimRow, idx []int, res []store.ClaimResult) error {
	args := make([]any, 0, 1+3*len(idx))
	args = append(args, t.claimID)
	for j, i := range idx {
		args = append(args, j, rows[i].Scope, rows[i].MessageID)
	}
	rs, err := t.b.Tx.QueryContext(ctx, t.d.t.Expand(`SELECT m.ord, i.claim_id = ?, i.payload_hash, d.payload_hash FROM (`+keysSQL(len(idx))+`) AS m
LEFT JOIN {inbox} i ON i.scope = m.scope AND i.message_id = m.message_id
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.key_id = m.message_id
LOCK IN SHARE MODE`), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var ord int
		var mine sql.NullBool
		var hash, dead []byte
		if err := rs.Scan(&ord, &mine, &hash, &dead); err != nil {
			return err
		}
		if ord < 0 || ord >= len(idx) {
			return errors.New("mysqlstore: the claim's lookup returned an unknown ordinal")
		}
		r := &res[idx[ord]]
		switch {
		case mine.Valid && mine.Bool:
			r.Status = store.ClaimNew
		case hash != nil:
			r.Status, r.StoredHash = store.ClaimExisting, hash
		case dead != nil:
			r.Status, r.StoredHash = store.ClaimDeadLettered, dead
		default:
			return store.ErrClaimRace
		}
	}
	return rs.Err()
}

// RecordDrift inserts the drift rows in the transaction.
func (t *myTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	return insertDrift(ctx, t.b.Tx, t.d.t, rows)
}

// DeadLetter inserts the dead letters in the transaction.
func (t *myTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	return insertDeadLetters(ctx, t.b.Tx, t.d.t, rows)
}

// SaveCheckpoint saves cp unless the saved position is higher.
func (t *myTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	_, err := t.b.Tx.ExecContext(ctx, t.d.t.Expand("INSERT INTO {checkpoints} (scope, source, `partition`, position, updated_at) VALUES (?, ?, ?, ?, ?)\n"+
		"ON DUPLICATE KEY UPDATE updated_at = IF(VALUES(position) > position, VALUES(updated_at), updated_at), position = GREATEST(position, VALUES(position))"),
		cp.Scope, cp.Source, cp.PartitionText(), cp.Position, formatTime(time.Now()))
	return err
}

// AdvanceCheckpoint implements store.CheckpointAdvancer: an UPDATE of
// the row at previous (for -1, an INSERT of the row, or an update of one
// saved at -1), whose exclusive lock orders the transactions of a
// partition; the second finds the position moved (READ COMMITTED re-reads
// the row it waited for). A move that changes no row (to where it is) is
// told by a locking read.
func (t *myTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	now := formatTime(time.Now())
	var r sql.Result
	var err error
	if previous == -1 {
		r, err = t.b.Tx.ExecContext(ctx, t.d.t.Expand("INSERT INTO {checkpoints} (scope, source, `partition`, position, updated_at) VALUES (?, ?, ?, ?, ?)\n"+
			"ON DUPLICATE KEY UPDATE updated_at = IF(position = -1, VALUES(updated_at), updated_at), position = IF(position = -1, VALUES(position), position)"),
			cp.Scope, cp.Source, cp.PartitionText(), cp.Position, now)
	} else {
		r, err = t.b.Tx.ExecContext(ctx, t.d.t.Expand("UPDATE {checkpoints} SET position = ?, updated_at = ?\n"+
			"WHERE scope = ? AND source = ? AND `partition` = ? AND position = ?"), cp.Position, now, cp.Scope, cp.Source, cp.PartitionText(), previous)
	}
	if err != nil {
		return false, err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	var pos int64
	err = t.b.Tx.QueryRowContext(ctx, t.d.t.Expand("SELECT position FROM {checkpoints} WHERE scope = ? AND source = ? AND `partition` = ? FOR UPDATE"),
		cp.Scope, cp.Source, cp.PartitionText()).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && pos == previous && cp.Position == previous, err
}

// Savepoint sets the message's savepoint.
func (t *myTx) Savepoint(ctx context.Context) error {
	t.c.clearBroken()
	_, err := t.b.Tx.ExecContext(ctx, "SAVEPOINT txinbox_message")
	return err
}

// RollbackToSavepoint undoes the message's work (and forgets a COMMIT the
// guard refused during it).
func (t *myTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	t.c.clearBroken()
	return err
}

// ReleaseSavepoint releases the message's savepoint.
func (t *myTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "RELEASE SAVEPOINT txinbox_message")
	return err
}

// Commit ends the XA transaction (XA END, XA COMMIT ... ONE PHASE) and
// gives the connection back. A transaction a handler broke is rolled
// back instead, and the error says how.
func (t *myTx) Commit(ctx context.Context) error {
	if broken, _ := t.c.state(); broken != nil {
		t.c.own.Store(true)
		return errors.Join(broken, t.b.End())
	}
	t.c.own.Store(true)
	err := t.b.Tx.Commit()
	return errors.Join(err, t.b.End())
}

// Rollback rolls back, also a transaction a handler ended, and gives the
// connection back.
func (t *myTx) Rollback(context.Context) error {
	t.c.own.Store(true)
	return t.b.End()
}

// Check reports, after a handler, what the connection saw it do (no
// round trip): end the *sql.Tx, run a statement that would have ended
// the transaction (refused), a statement after which the server rolled
// the transaction back (a swallowed deadlock), or lose the connection.
func (t *myTx) Check(herr error) error {
	broken, closed := t.c.state()
	if closed {
		return connClosed(herr)
	}
	if broken != nil {
		return broken
	}
	return nil
}

// connClosed is the error of a connection lost during the handler.
func connClosed(herr error) error {
	if serverOrNetwork(herr) {
		return &store.BrokenTxError{Lost: true, ConnClosed: true, DatabaseFault: true,
			Reason: "the connection failed during the handler: " + herr.Error()}
	}
	return &store.BrokenTxError{Lost: true, ConnClosed: true,
		Reason: "its connection was closed during the handler (go-sql-driver closes it when a statement's context expires, e.g. the handler's own deadline)"}
}

// serverOrNetwork reports whether a handler's error says that the server
// or the network closed its connection, not its own context.
func serverOrNetwork(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errorNumber(err) != 0 || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "invalid connection")
}
