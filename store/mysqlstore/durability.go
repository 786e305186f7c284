package mysqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/store"
)

// Settings are the server settings the store reads at start: what
// decides whether a committed inbox row survives a crash or a failover.
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
	// Doublewrite is innodb_doublewrite (ON, OFF; MySQL 8.0.30+ also
	// DETECT_ONLY, DETECT_AND_RECOVER).
	Doublewrite string
	// SemiSync is rpl_semi_sync_master_enabled (MariaDB, MySQL before
	// 8.0.26) or rpl_semi_sync_source_enabled: ON when commits wait for a
	// replica; "" when the server has no such variable (the plugin is not
	// loaded).
	SemiSync string
	// Replicas is the number of replicas reading the binary log (Binlog
	// Dump threads), -1 when the user may not see them (no PROCESS
	// privilege).
	Replicas int
	// Isolation is the server's default isolation level (the store sets
	// its batches' own: Options.Isolation).
	Isolation string
}

// ReadSettings reads the Settings (MariaDB calls the isolation variable
// tx_isolation until 11.1; MySQL 8 transaction_isolation).
func (d *Driver) ReadSettings(ctx context.Context) (Settings, error) {
	var s Settings
	var logBin int
	err := d.db.QueryRowContext(ctx, `SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog, @@innodb_doublewrite`).
		Scan(&s.Version, &s.FlushLogAtTrxCommit, &logBin, &s.SyncBinlog, &s.Doublewrite)
	if err != nil {
		return s, err
	}
	s.LogBin = logBin == 1
	switch s.Doublewrite { // a boolean variable reads as 1 or 0
	case "1":
		s.Doublewrite = "ON"
	case "0":
		s.Doublewrite = "OFF"
	}
	for _, v := range []string{"@@transaction_isolation", "@@tx_isolation"} {
		if d.db.QueryRowContext(ctx, "SELECT "+v).Scan(&s.Isolation) == nil {
			break
		}
	}
	var name string
	err = d.db.QueryRowContext(ctx, `SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES
		WHERE VARIABLE_NAME IN ('RPL_SEMI_SYNC_MASTER_ENABLED', 'RPL_SEMI_SYNC_SOURCE_ENABLED') LIMIT 1`).Scan(&name, &s.SemiSync)
	if err != nil {
		// MySQL 8 reads global variables in performance_schema
		_ = d.db.QueryRowContext(ctx, `SELECT VARIABLE_VALUE FROM performance_schema.global_variables
			WHERE VARIABLE_NAME IN ('rpl_semi_sync_master_enabled', 'rpl_semi_sync_source_enabled') LIMIT 1`).Scan(&s.SemiSync)
	}
	s.Replicas, err = d.replicas(ctx)
	return s, err
}

// replicas counts the Binlog Dump threads, -1 when the user may not see
// the threads of others (PROCESS).
func (d *Driver) replicas(ctx context.Context) (int, error) {
	var process int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.USER_PRIVILEGES
		WHERE PRIVILEGE_TYPE IN ('PROCESS', 'SUPER') AND GRANTEE = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')`).
		Scan(&process); err != nil {
		return 0, err
	}
	if process == 0 {
		return -1, nil
	}
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'`).Scan(&n)
	return n, err
}

// Durability implements store.DurabilityReader: ReadSettings, judged
// (Settings.Judge).
func (d *Driver) Durability(ctx context.Context) (store.Durability, error) {
	s, err := d.ReadSettings(ctx)
	if err != nil {
		return store.Durability{}, fmt.Errorf("mysqlstore: reading the durability settings: %w", err)
	}
	return s.Judge(), nil
}

// Warnings says plainly each setting under which a committed inbox row
// (and its effect) can be lost, and how, one line each (the Risks of
// Judge): an empty list when none can. A lost inbox row is a message
// processed a second time when it is delivered again; a lost effect with
// its row is an effect the broker will not deliver again (it was acked).
func (s Settings) Warnings() []string {
	var out []string
	for _, r := range s.Judge().Risks {
		out = append(out, r.String())
	}
	return out
}

const lostAcked = "their messages were acked, their inbox rows and effects are gone"

// Judge turns the settings into the settings shown, the risks and the two
// sentences of store.Durability.
func (s Settings) Judge() store.Durability {
	d := store.Durability{Settings: []store.DurabilitySetting{
		{Name: "innodb_flush_log_at_trx_commit", Value: fmt.Sprint(s.FlushLogAtTrxCommit)},
		{Name: "log_bin", Value: onOff(s.LogBin)}, {Name: "sync_binlog", Value: fmt.Sprint(s.SyncBinlog)},
		{Name: "innodb_doublewrite", Value: s.Doublewrite}, {Name: "semi-synchronous replication", Value: orNone(s.SemiSync)},
		{Name: "replicas", Value: s.replicaCount()},
	}}
	const fixFlush = "SET GLOBAL innodb_flush_log_at_trx_commit = 1, and set it in the server's option file (my.cnf)"
	switch s.FlushLogAtTrxCommit {
	case 1:
	case 2:
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "innodb_flush_log_at_trx_commit", Value: "2", Setting: "innodb_flush_log_at_trx_commit=2",
			Loses: "a crash of the machine (power, kernel) loses the transactions committed in about the last second: " + lostAcked, Fix: fixFlush})
	default:
		v := fmt.Sprint(s.FlushLogAtTrxCommit)
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "innodb_flush_log_at_trx_commit", Value: v, Setting: "innodb_flush_log_at_trx_commit=" + v,
			Loses: "a crash of the server process loses the transactions committed in about the last second: " + lostAcked, Fix: fixFlush})
	}
	if s.LogBin && s.SyncBinlog != 1 {
		v := fmt.Sprint(s.SyncBinlog)
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "sync_binlog", Value: v, Setting: "sync_binlog=" + v,
			Loses: "with the binary log on, a crash of the machine can lose committed transactions from the binary log, so a replica " +
				"promoted after it lacks inbox rows and effects that the primary had committed (and acked)",
			Fix: "SET GLOBAL sync_binlog = 1, and set it in my.cnf"})
	}
	if s.tornPages() {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "innodb_doublewrite", Value: s.Doublewrite, Setting: "innodb_doublewrite=" + s.Doublewrite,
			Loses: "a crash of the machine during a page write can leave a torn page that recovery cannot repair: committed inbox rows and " +
				"effects can be lost or corrupted after their messages were acked",
			Fix: "set innodb_doublewrite = ON in my.cnf and restart (off is safe only on storage that never tears a page)"})
	}
	if s.Replicas > 0 && !strings.EqualFold(s.SemiSync, "ON") {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "asynchronous_replica", Value: "async",
			Setting: fmt.Sprintf("asynchronous replication to %d replica(s)", s.Replicas),
			Loses:   "commits do not wait for any replica: a failover to a replica loses the commits it had not received yet (its lag), whose messages were acked",
			Fix:     "turn on semi-synchronous replication (rpl_semi_sync_master_enabled, MySQL 8.0.26+: rpl_semi_sync_source_enabled) with AFTER_SYNC"})
	}
	if s.Replicas < 0 {
		d.Unread = append(d.Unread, "the replicas: the user may not see the threads of other users (GRANT PROCESS ON *.* TO <txinbox's user>)")
	}
	d.Crash, d.Failover = s.crashSentence(), s.failoverSentence()
	return d
}

func (s Settings) crashSentence() string {
	switch {
	case s.FlushLogAtTrxCommit == 1 && !s.tornPages():
		return "a crash of the server or of its machine loses no acked message: each commit's redo log is flushed before txinbox acks"
	case s.FlushLogAtTrxCommit == 2:
		return "a crash of the server process loses nothing; a crash of its machine loses about the last second of commits, whose messages were acked"
	case s.FlushLogAtTrxCommit != 1:
		return "a crash of the server process or of its machine loses about the last second of commits, whose messages were acked"
	}
	return "a crash of the machine during a page write can corrupt committed rows (innodb_doublewrite " + s.Doublewrite + ")"
}

// tornPages reports whether a torn page goes unrepaired: the doublewrite
// buffer off, or only detecting (MariaDB's DETECT_ONLY).
func (s Settings) tornPages() bool {
	return strings.EqualFold(s.Doublewrite, "OFF") || strings.EqualFold(s.Doublewrite, "DETECT_ONLY")
}

func (s Settings) failoverSentence() string {
	switch {
	case s.Replicas < 0:
		return "not known: the replicas could not be read"
	case s.Replicas == 0:
		return "no replica reads the binary log: a failover does not apply (a replica that connects later is asynchronous unless semi-synchronous replication is on)"
	case strings.EqualFold(s.SemiSync, "ON"):
		return "semi-synchronous replication: a commit returns once a replica received it, so a failover to it loses no acked message " +
			"(unless the primary fell back to asynchronous after rpl_semi_sync_master_timeout)"
	}
	return "asynchronous replication: a failover loses the commits the replica had not received yet, whose messages were acked"
}

func (s Settings) replicaCount() string {
	if s.Replicas < 0 {
		return "not read"
	}
	return fmt.Sprint(s.Replicas)
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

func orNone(s string) string {
	if s == "" {
		return "not available"
	}
	return s
}
