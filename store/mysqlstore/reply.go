package mysqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
)

// Replies (store.ReplyKeeper, store.ReplyLister) and the in-flight locks
// (store.InFlightLocker).
//
// MySQL has no transaction-scoped lock on a value that is not a row
// (PostgreSQL's pg_try_advisory_xact_lock), and a locking read with
// NOWAIT or SKIP LOCKED cannot tell a key another transaction inserted
// and holds uncommitted from a key nobody has (neither sees the
// uncommitted row; NOWAIT fails the whole statement, not the key). The
// in-flight locks are named locks, GET_LOCK(name, 0): they do not wait,
// and another session's GET_LOCK of the same name answers 0 while this
// one holds it. A named lock is the session's, not the transaction's:
// the rollback does not release it. The connection (conn.go) keeps the
// names it took and releases them on every way the batch transaction
// ends, right after the server ended it (conn.end: the store's commit or
// rollback, a handler's tx.Commit or tx.Rollback, database/sql's rollback
// when the context ends); a connection whose release failed is marked
// bad, so the pool closes it and the server frees its locks; and the pool
// never hands out a connection that still holds one (ResetSession). A
// connection lost frees them with its session.

var (
	_ store.ReplyKeeper      = (*myTx)(nil)
	_ store.InFlightLocker   = (*myTx)(nil)
	_ store.ReplyLister      = (*Driver)(nil)
	_ store.DurabilityReader = (*Driver)(nil)
)

// lockName is the named lock of key in the inbox of t's prefix: a hex
// SHA-256 of the prefix and the key, which the server hashes again with
// the connection's database (named locks are server-wide; MySQL takes
// names of 64 characters at most). Its characters are [0-9a-f], so it
// is written into the statement as a literal.
func lockName(prefix string, key store.Key) string {
	h := sha256.New()
	for _, s := range []string{prefix, key.Scope, key.MessageID} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lockExpr is the server's name of a lock: one per database.
func lockExpr(name string) string { return "SHA2(CONCAT(DATABASE(), '/" + name + "'), 256)" }

// TryLockKeys implements store.InFlightLocker with named locks
// (GET_LOCK(name, 0), which does not wait), one statement per chunk of
// keys, held until the batch transaction ends (the connection releases
// them then: see above).
func (t *myTx) TryLockKeys(ctx context.Context, keys []store.Key) ([]bool, error) {
	got := make([]bool, 0, len(keys))
	for start := 0; start < len(keys); start += claimChunk {
		chunk := keys[start:min(start+claimChunk, len(keys))]
		names := make([]string, len(chunk))
		var q strings.Builder
		for i, k := range chunk {
			names[i] = lockName(t.d.t.Prefix, k)
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			q.WriteString("SELECT " + strconv.Itoa(i) + ", GET_LOCK(" + lockExpr(names[i]) + ", 0)")
		}
		// Noted before they are asked for: a statement cut short may
		// have taken some.
		t.c.holds(names)
		ok, err := scanLocks(t.b.Tx.QueryContext(ctx, q.String()))
		if err != nil {
			return nil, err
		}
		if len(ok) != len(chunk) {
			return nil, errors.New("mysqlstore: the in-flight locks' statement answered for fewer keys than asked")
		}
		got = append(got, ok...)
	}
	return got, nil
}

// scanLocks reads (ordinal, GET_LOCK's answer) rows into answers in
// ordinal order: true for 1, false for 0 or NULL.
func scanLocks(rs *sql.Rows, err error) ([]bool, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []bool
	for rs.Next() {
		var ord int
		var got sql.NullInt64
		if err := rs.Scan(&ord, &got); err != nil {
			return nil, err
		}
		for len(out) <= ord {
			out = append(out, false)
		}
		out[ord] = got.Valid && got.Int64 == 1
	}
	return out, rs.Err()
}

// SaveReplies implements store.ReplyKeeper: one UPDATE per chunk of rows,
// joined to their keys, in the batch transaction (which inserted the
// rows).
func (t *myTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	for start := 0; start < len(rows); start += claimChunk {
		chunk := rows[start:min(start+claimChunk, len(rows))]
		args := make([]any, 0, 3*len(chunk))
		var b strings.Builder
		for i, r := range chunk {
			if i == 0 {
				b.WriteString("SELECT ? AS scope, ? AS message_id, ? AS reply")
			} else {
				b.WriteString(" UNION ALL SELECT ?, ?, ?")
			}
			args = append(args, r.Scope, r.MessageID, r.Reply)
		}
		_, err := t.b.Tx.ExecContext(ctx, t.d.t.Expand(`UPDATE {inbox} i JOIN (`+b.String()+`) AS m
ON i.scope = m.scope AND i.message_id = m.message_id SET i.reply = m.reply`), args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// Replies implements store.ReplyKeeper: one locking read per chunk of
// keys (the newest committed rows, which the claim's lookup locked
// already), by primary key, aligned with keys.
func (t *myTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for start := 0; start < len(keys); start += claimChunk {
		chunk := keys[start:min(start+claimChunk, len(keys))]
		where, args := keysWhereOf(len(chunk), func(k int) *store.Key { return &chunk[k] }, "message_id")
		rs, err := t.b.Tx.QueryContext(ctx, t.d.t.Expand(`SELECT scope, message_id, reply FROM {inbox} FORCE INDEX (PRIMARY)
WHERE `+where+` LOCK IN SHARE MODE`), args...)
		if err != nil {
			return nil, err
		}
		if err := scanReplies(rs, chunk, out[start:start+len(chunk)]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanReplies puts each row's reply at the places of its key in keys.
func scanReplies(rs *sql.Rows, keys []store.Key, into [][]byte) error {
	defer rs.Close()
	at := make(map[store.Key][]int, len(keys))
	for i, k := range keys {
		at[k] = append(at[k], i)
	}
	for rs.Next() {
		var k store.Key
		var r []byte
		if err := rs.Scan(&k.Scope, &k.MessageID, &r); err != nil {
			return err
		}
		is, ok := at[k]
		if !ok {
			return errors.New("mysqlstore: the replies' read returned a key it did not ask for")
		}
		for _, i := range is {
			into[i] = r
		}
	}
	return rs.Err()
}

// ListReplies implements store.ReplyLister: the inbox rows that hold a
// reply, of the scopes that start with scopePrefix (byte for byte),
// newest first, through the received_at index.
func (d *Driver) ListReplies(ctx context.Context, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	rs, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT scope, message_id, source, received_at, reply FROM {inbox}
WHERE reply IS NOT NULL AND LEFT(scope, LENGTH(?)) = ? ORDER BY received_at DESC LIMIT ?`), []byte(scopePrefix), []byte(scopePrefix), limit)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []store.ReplyRecord
	for rs.Next() {
		var r store.ReplyRecord
		var received time.Time
		if err := rs.Scan(&r.Scope, &r.MessageID, &r.Source, at(&received), &r.Reply); err != nil {
			return nil, err
		}
		r.ReceivedAt = received
		out = append(out, r)
	}
	return out, rs.Err()
}

// holds notes named locks that the batch takes.
func (c *conn) holds(names []string) {
	c.mu.Lock()
	c.locks = append(c.locks, names...)
	c.mu.Unlock()
}

// holdsLocks reports whether named locks of a batch are still held (their
// release failed, or was not run): such a connection must not go back to
// the pool.
func (c *conn) holdsLocks() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.locks) > 0
}

// releaseLocks releases the batch's named locks, after the server ended
// its transaction (conn.end), in one statement: each RELEASE_LOCK frees
// one GET_LOCK of the name (a key twice in a batch was taken twice), and
// one of a lock this session does not hold changes nothing. When the
// server does not confirm it, the connection is marked bad: the pool
// closes it, which frees its locks.
func (c *conn) releaseLocks() {
	c.mu.Lock()
	names := c.locks
	c.locks = nil
	c.mu.Unlock()
	if len(names) == 0 {
		return
	}
	var q strings.Builder
	q.WriteString("DO ")
	for i, n := range names {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("RELEASE_LOCK(" + lockExpr(n) + ")")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.inner.ExecContext(ctx, q.String(), nil); err != nil {
		c.bad.Store(true)
	}
}
