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
// and commits: MariaDB's ceiling (see the bench's ceiling scenario).
func CeilingBatch(ctx context.Context, db *sql.DB, inbox string, batch []string, hash []byte, claim int64) error {
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
	res, err := tx.ExecContext(ctx, "INSERT INTO "+inbox+" (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, claim_id) VALUES "+
		rows[:len(rows)-1]+" ON DUPLICATE KEY UPDATE claim_id = "+inbox+".claim_id", args...)
	if err != nil {
		return err
	}
	ins, err := res.RowsAffected()
	if err != nil {
		return err
	}
	ids := make([]any, len(batch))
	for i, id := range batch {
		ids[i] = id
	}
	if int(ins) == len(batch) {
		_, err = tx.ExecContext(ctx, "INSERT INTO effects VALUES "+Values(len(batch)), ids...)
	} else if ins > 0 {
		_, err = tx.ExecContext(ctx, "INSERT INTO effects SELECT scope, message_id FROM "+inbox+" WHERE scope = 'bench' AND message_id IN ("+
			strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+") AND claim_id = ?", append(ids, claim)...)
	}
	return errors.Join(err, tx.Commit())
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
