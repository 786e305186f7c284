package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

var _ store.DurabilityReader = (*Driver)(nil)

// pgDurability is what Durability reads in one round trip.
type pgDurability struct {
	fsync, fullPageWrites, syncCommit, standbyNames string
	walWriterDelay                                  string
	role                                            string
	canSeeStandbys                                  bool
	standbys                                        []standby
}

// standby is one row of pg_stat_replication.
type standby struct {
	name, addr, syncState string
}

// Durability implements store.DurabilityReader. It reads fsync,
// full_page_writes, synchronous_commit (its effective value on a store
// connection: postgresql.conf, ALTER DATABASE and ALTER ROLE defaults
// included), synchronous_standby_names, wal_writer_delay and the standbys
// of pg_stat_replication. A role that is neither a superuser nor a member
// of pg_read_all_stats (pg_monitor) sees the standbys but not how they
// replicate: that is reported in Unread.
func (d *Driver) Durability(ctx context.Context) (store.Durability, error) {
	var p pgDurability
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('full_page_writes'),
	current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
	current_setting('wal_writer_delay'), current_user::text,
	coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false)
		OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')`).Scan(
			&p.fsync, &p.fullPageWrites, &p.syncCommit, &p.standbyNames, &p.walWriterDelay, &p.role, &p.canSeeStandbys); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(client_addr::text, 'local'),
	coalesce(sync_state, '') FROM pg_stat_replication ORDER BY application_name`)
		var s standby
		_, err := pgx.ForEachRow(rows, []any{&s.name, &s.addr, &s.syncState}, func() error {
			p.standbys = append(p.standbys, s)
			return nil
		})
		return err
	})
	if err != nil {
		return store.Durability{}, fmt.Errorf("pgstore: reading the durability settings: %w", err)
	}
	return p.judge(), nil
}

// judge turns the settings read into the risks and the two sentences.
func (p pgDurability) judge() store.Durability {
	d := store.Durability{Settings: []store.DurabilitySetting{
		{Name: "fsync", Value: p.fsync}, {Name: "full_page_writes", Value: p.fullPageWrites},
		{Name: "synchronous_commit", Value: p.syncCommit}, {Name: "synchronous_standby_names", Value: p.standbyNames},
		{Name: "standbys", Value: p.standbyList()},
	}}
	if p.fsync == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "fsync", Setting: "fsync=off",
			Loses: "PostgreSQL does not flush its writes to disk: a crash of its machine or a power loss can lose or corrupt " +
				"transactions committed at any time before, whose messages txinbox had acked (and whose AS4 receipts it had sent)",
			Fix: "set fsync = on in postgresql.conf and reload"})
	}
	if p.fullPageWrites == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "full_page_writes", Setting: "full_page_writes=off",
			Loses: "a crash of the machine or a power loss during a page write can leave a torn page that recovery cannot repair: " +
				"committed inbox rows and effects can be lost or corrupted after txinbox acked their messages",
			Fix: "set full_page_writes = on in postgresql.conf and reload (off is safe only on a file system that never tears a page, such as ZFS)"})
	}
	if p.syncCommit == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "synchronous_commit", Setting: "synchronous_commit=off",
			Loses: fmt.Sprintf("a commit returns before its WAL is on disk: a crash of PostgreSQL or of its machine loses the "+
				"transactions committed in the last %s or so (3 × wal_writer_delay %s), whose messages txinbox had already acked",
				p.asyncWindow(), p.walWriterDelay),
			Fix: "set synchronous_commit = on where txinbox's connections get it: ALTER ROLE <txinbox's role> SET synchronous_commit = on " +
				"(or ALTER DATABASE, or postgresql.conf), and reconnect"})
	}
	d.Risks = append(d.Risks, p.replicationRisks()...)
	if len(p.standbys) > 0 && !p.canSeeStandbys {
		d.Unread = append(d.Unread, fmt.Sprintf("pg_stat_replication: %d standby(s) connected, but role %s may not see whether they "+
			"replicate synchronously (sync_state): GRANT pg_monitor TO %s", len(p.standbys), p.role, p.role))
	}
	d.Crash, d.Failover = p.crashSentence(), p.failoverSentence()
	return d
}

// synchronous are the standbys whose commits the primary waits for.
func (p pgDurability) synchronous() (sync, async []standby) {
	for _, s := range p.standbys {
		switch s.syncState {
		case "sync", "quorum":
			sync = append(sync, s)
		case "":
			// hidden from the role: Unread says so
		default: // async, potential
			async = append(async, s)
		}
	}
	return sync, async
}

// replicationRisks: a commit that does not wait for any standby can be
// missing on the one promoted.
func (p pgDurability) replicationRisks() []store.DurabilityRisk {
	sync, async := p.synchronous()
	if len(sync) > 0 && p.syncCommit == "local" { // off: a risk already, named once
		return []store.DurabilityRisk{{Name: "synchronous_commit", Setting: "synchronous_commit=" + p.syncCommit,
			Loses: fmt.Sprintf("commits do not wait for the synchronous standby (synchronous_standby_names = '%s'): "+
				"a failover to it loses the commits it had not received yet, whose messages txinbox had acked", p.standbyNames),
			Fix: "set synchronous_commit = on (or remote_apply) for txinbox's role or database: ALTER ROLE <txinbox's role> SET synchronous_commit = on"}}
	}
	if len(sync) > 0 || len(async) == 0 {
		return nil
	}
	var names []string
	for _, s := range async {
		names = append(names, fmt.Sprintf("%q (%s, sync_state=%s)", s.name, s.addr, s.syncState))
	}
	return []store.DurabilityRisk{{Name: "asynchronous_standby", Setting: "asynchronous replication to " + strings.Join(names, ", "),
		Loses: "no standby is synchronous (synchronous_standby_names = '" + p.standbyNames + "'): a failover to a standby loses " +
			"the commits it had not received yet (its replication lag), whose messages txinbox had acked",
		Fix: fmt.Sprintf("name the standby in synchronous_standby_names (e.g. 'FIRST 1 (%s)') in postgresql.conf and reload, "+
			"with synchronous_commit on or remote_apply", async[0].name)}}
}

func (p pgDurability) standbyList() string {
	if len(p.standbys) == 0 {
		return "none"
	}
	var out []string
	for _, s := range p.standbys {
		state := s.syncState
		if state == "" {
			state = "hidden"
		}
		out = append(out, fmt.Sprintf("%s (%s, %s)", s.name, s.addr, state))
	}
	return strings.Join(out, ", ")
}

// asyncWindow is how old a commit synchronous_commit=off can lose at
// most: three times wal_writer_delay.
func (p pgDurability) asyncWindow() string {
	delay, err := time.ParseDuration(p.walWriterDelay)
	if err != nil {
		return "3 × wal_writer_delay"
	}
	return (3 * delay).String()
}

func (p pgDurability) crashSentence() string {
	switch {
	case p.fsync == "off" || p.fullPageWrites == "off":
		return "a crash of PostgreSQL's machine or a power loss can lose or corrupt any committed transaction: acked messages can vanish"
	case p.syncCommit == "off":
		return fmt.Sprintf("a crash of PostgreSQL or of its machine loses the commits of the last %s or so, whose messages were acked", p.asyncWindow())
	}
	return "a crash of PostgreSQL or of its machine loses no acked message: each commit is on disk before txinbox acks"
}

func (p pgDurability) failoverSentence() string {
	sync, async := p.synchronous()
	switch {
	case len(p.standbys) == 0:
		return "no standby replicates from this server (pg_stat_replication is empty): nothing to fail over to that txinbox " +
			"can see (a managed service's storage replication is not seen here)"
	case len(sync) > 0 && (p.syncCommit == "local" || p.syncCommit == "off"):
		return "a failover can lose the last commits: synchronous_commit=" + p.syncCommit + " does not wait for the synchronous standby"
	case len(sync) > 0 && p.syncCommit == "remote_write":
		return "a failover to a synchronous standby loses no acked message unless the standby's machine crashes too before it " +
			"flushed (synchronous_commit=remote_write); one to an asynchronous standby can lose the last commits"
	case len(sync) > 0 && len(async) > 0:
		return "a failover to the synchronous standby loses no acked message; one to an asynchronous standby (" +
			p.names(async) + ") can lose the last commits"
	case len(sync) > 0:
		return "a failover to the synchronous standby (" + p.names(sync) + ") loses no acked message: each commit is on its disk too before txinbox acks"
	case len(async) > 0:
		return "a failover to an asynchronous standby (" + p.names(async) + ") loses the commits it had not received yet, whose messages were acked"
	}
	return "unknown: how the standbys replicate is hidden from role " + p.role
}

func (p pgDurability) names(ss []standby) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.name)
	}
	return strings.Join(out, ", ")
}
