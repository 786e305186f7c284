package mysqlstore

import (
	"context"
	"fmt"
	"strings"
)

// Settings are the server settings the store reads at start: what
// decides whether a committed inbox row survives a crash.
type Settings struct {
	// Version is the server's VERSION().
	Version string
	// FlushLogAtTrxCommit is innodb_flush_log_at_trx_commit: 1 writes
	// and flushes the redo log at every commit; 2 writes it, flushed
	// about once a second; 0 neither.
	FlushLogAtTrxCommit int
	// LogBin reports the binary log on; SyncBinlog is sync_binlog (1:
	// flushed at every commit, 0: when the OS wants, N: every N commits).
	LogBin     bool
	SyncBinlog int
	// Isolation is the server's default isolation level (the store sets
	// its batches' own: Options.Isolation).
	Isolation string
}

// ReadSettings reads the Settings (MariaDB calls the isolation variable
// tx_isolation until 11.1; MySQL 8 transaction_isolation).
func (d *Driver) ReadSettings(ctx context.Context) (Settings, error) {
	var s Settings
	var logBin int
	err := d.db.QueryRowContext(ctx, `SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog`).
		Scan(&s.Version, &s.FlushLogAtTrxCommit, &logBin, &s.SyncBinlog)
	if err != nil {
		return s, err
	}
	s.LogBin = logBin == 1
	for _, v := range []string{"@@transaction_isolation", "@@tx_isolation"} {
		if d.db.QueryRowContext(ctx, "SELECT "+v).Scan(&s.Isolation) == nil {
			break
		}
	}
	return s, nil
}

// Warnings says plainly each setting under which a committed inbox row
// (and its effect) can be lost, and how: an empty list when none can.
// A lost inbox row is a message processed a second time when it is
// delivered again; a lost effect with its row is an effect the broker
// will not deliver again (it was acked).
func (s Settings) Warnings() []string {
	var out []string
	switch s.FlushLogAtTrxCommit {
	case 1:
	case 2:
		out = append(out, "innodb_flush_log_at_trx_commit=2: a crash of the machine (power, kernel) loses the transactions "+
			"committed in about the last second: their messages were acked, their inbox rows and effects are gone; set it to 1")
	default:
		out = append(out, fmt.Sprintf("innodb_flush_log_at_trx_commit=%d: a crash of the server process loses the transactions "+
			"committed in about the last second: their messages were acked, their inbox rows and effects are gone; set it to 1", s.FlushLogAtTrxCommit))
	}
	if s.LogBin && s.SyncBinlog != 1 {
		out = append(out, fmt.Sprintf("sync_binlog=%d with the binary log on: a crash of the machine can lose committed "+
			"transactions from the binary log, so a replica promoted after it lacks inbox rows and effects that the primary "+
			"had committed (and acked); set it to 1", s.SyncBinlog))
	}
	return out
}

// CheckKeys refuses key columns that do not compare bytes: the inbox's
// and the dead letters' scope and message_id must be binary strings
// (VARBINARY, as Migrate creates them). A column changed to a text type
// with a case- or accent-insensitive collation (utf8mb4_general_ci, the
// default of many servers) would make "A" and "a" one key, and a PAD
// SPACE collation "a" and "a " one key: a message would be skipped as a
// duplicate of another.
func (d *Driver) CheckKeys(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, coalesce(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)
		AND COLUMN_NAME IN ('scope', 'message_id')`, d.t.Prefix+"inbox", d.t.Prefix+"dead_letters")
	if err != nil {
		return err
	}
	defer rows.Close()
	var bad []string
	n := 0
	for rows.Next() {
		var table, col, typ, coll string
		if err := rows.Scan(&table, &col, &typ, &coll); err != nil {
			return err
		}
		n++
		if typ != "varbinary" && typ != "binary" {
			bad = append(bad, fmt.Sprintf("%s.%s is %s %s", table, col, typ, coll))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("mysqlstore: the key columns must compare bytes (VARBINARY), or keys that differ would be one: %s; "+
			"change them back (ALTER TABLE ... MODIFY ... VARBINARY)", strings.Join(bad, ", "))
	}
	if n != 4 {
		return fmt.Errorf("mysqlstore: found %d of the 4 key columns of %sinbox and %sdead_letters (run Migrate)", n, d.t.Prefix, d.t.Prefix)
	}
	return nil
}
