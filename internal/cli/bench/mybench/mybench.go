// Package mybench holds the statements of txinbox bench's MySQL
// scenarios (internal/cli/bench): MariaDB's ceiling and the seed's
// algorithm, each one batch or message on a *sql.DB.
package mybench

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/txinbox/txinbox/store/mysqlstore"
)

// CeilingBatch claims batch (in key order) with one multi-row INSERT ...
// ON DUPLICATE KEY UPDATE, writes the new rows' effects with one more,
// and commits: MariaDB's ceiling (see the bench's ceiling scenario). With
// returning (MariaDB), the claim returns which rows it inserted and the
// effects are a VALUES list of them; without, the effects of a batch
// with duplicates are an INSERT ... SELECT of the rows with its claim_id.
func CeilingBatch(ctx context.Context, db *sql.DB, inbox string, batch []string, hash []byte, claim int64, returning bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	now := mysqlstore.FormatTime(time.Now())
	rows := strings.Repeat("('bench', ?, 'bench', '', '', ?, ?, ?, ?),", len(batch))
	args := make([]any, 0, 5*len(batch))
	for _, id := range batch {
		args = append(args, id, hash, now, now, claim)
	}
	q := "INSERT INTO " + inbox + " (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, claim_id) VALUES " +
		rows[:len(rows)-1] + " ON DUPLICATE KEY UPDATE claim_id = " + inbox + ".claim_id"
	var fresh []any
	if returning {
		fresh, err = claimReturning(ctx, tx, q, args, claim)
	} else {
		fresh, err = claimCounted(ctx, tx, q, args, batch, inbox, claim)
	}
	if err == nil && len(fresh) > 0 {
		_, err = tx.ExecContext(ctx, "INSERT INTO effects VALUES "+Values(len(fresh)), fresh...)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// claimReturning runs the claim q with RETURNING and returns the ids it
// inserted.
func claimReturning(ctx context.Context, tx *sql.Tx, q string, args []any, claim int64) ([]any, error) {
	rs, err := tx.QueryContext(ctx, q+" RETURNING message_id, claim_id = ?", append(args, claim)...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var fresh []any
	for rs.Next() {
		var id string
		var mine bool
		if err := rs.Scan(&id, &mine); err != nil {
			return nil, err
		}
		if mine {
			fresh = append(fresh, id)
		}
	}
	return fresh, rs.Err()
}

// claimCounted runs the claim q and returns the batch's ids when it
// inserted them all; after a partial claim it writes the effects itself
// (INSERT ... SELECT of the rows with its claim_id) and returns none.
func claimCounted(ctx context.Context, tx *sql.Tx, q string, args []any, batch []string, inbox string, claim int64) ([]any, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	ins, err := res.RowsAffected()
	if err != nil || ins == 0 {
		return nil, err
	}
	ids := make([]any, len(batch))
	for i, id := range batch {
		ids[i] = id
	}
	if int(ins) == len(batch) {
		return ids, nil
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO effects SELECT scope, message_id FROM "+inbox+" WHERE scope = 'bench' AND message_id IN ("+
		strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+") AND claim_id = ?", append(ids, claim)...)
	return nil, err
}

// SeedOne is one message of the seed's algorithm: its own transaction,
// a duplicate told by the unique violation (1062).
func SeedOne(ctx context.Context, db *sql.DB, ins, id string, hash []byte) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	now := mysqlstore.FormatTime(time.Now())
	if _, err := tx.ExecContext(ctx, ins, id, hash, now, now); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return nil // a duplicate: roll back, ack
		}
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES ('bench', ?)", id); err != nil {
		return err
	}
	return tx.Commit()
}

// OpenDB opens cfg with txinbox's connections, at most conns.
func OpenDB(cfg *mysql.Config, conns int) (*sql.DB, error) {
	c, err := mysqlstore.Connector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(conns)
	return db, nil
}

// Values is n effect rows' VALUES list.
func Values(n int) string { return strings.TrimSuffix(strings.Repeat("('bench', ?),", n), ",") }

// Truncate empties tables.
func Truncate(ctx context.Context, db *sql.DB, tables ...string) error {
	var err error
	for _, t := range tables {
		_, e := db.ExecContext(ctx, "TRUNCATE TABLE "+t)
		err = errors.Join(err, e)
	}
	return err
}
