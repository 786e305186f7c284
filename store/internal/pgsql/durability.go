package pgsql

import (
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
)

// DurabilityQuery reads the settings of DurabilitySettings, in its
// order, and whether the role may see how the standbys replicate.
const DurabilityQuery = `SELECT current_setting('fsync'), current_setting('full_page_writes'),
	current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
	current_setting('wal_writer_delay'), current_user::text,
	coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false)
		OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')`

// StandbysQuery reads the standbys: name, address, sync_state (” when
// hidden from the role).
const StandbysQuery = `SELECT coalesce(application_name, ''), coalesce(client_addr::text, 'local'),
	coalesce(sync_state, '') FROM pg_stat_replication ORDER BY application_name`

// DurabilitySettings are what the store reads of the durability settings
// (DurabilityQuery, then StandbysQuery for Standbys).
type DurabilitySettings struct {
	Fsync, FullPageWrites, SyncCommit, StandbyNames string
	WalWriterDelay                                  string
	// Role is current_user; CanSeeStandbys whether it may read how the
	// standbys replicate (superuser, pg_read_all_stats).
	Role           string
	CanSeeStandbys bool
	Standbys       []Standby
}

// Standby is one row of pg_stat_replication (StandbysQuery).
type Standby struct {
	Name, Addr, SyncState string
}

// Judge turns the settings read into the risks and the two sentences.
func (p DurabilitySettings) Judge() store.Durability {
	d := store.Durability{Settings: []store.DurabilitySetting{
		{Name: "fsync", Value: p.Fsync}, {Name: "full_page_writes", Value: p.FullPageWrites},
		{Name: "synchronous_commit", Value: p.SyncCommit}, {Name: "synchronous_standby_names", Value: p.StandbyNames},
		{Name: "standbys", Value: p.standbyList()},
	}}
	if p.Fsync == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "fsync", Value: "off", Setting: "fsync=off",
			Loses: "PostgreSQL does not flush its writes to disk: a crash of its machine or a power loss can lose or corrupt " +
				"transactions committed at any time before, whose messages txinbox had acked (and whose AS4 receipts it had sent)",
			Fix: "set fsync = on in postgresql.conf and reload"})
	}
	if p.FullPageWrites == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "full_page_writes", Value: "off", Setting: "full_page_writes=off",
			Loses: "a crash of the machine or a power loss during a page write can leave a torn page that recovery cannot repair: " +
				"committed inbox rows and effects can be lost or corrupted after txinbox acked their messages",
			Fix: "set full_page_writes = on in postgresql.conf and reload (off is safe only on a file system that never tears a page, such as ZFS)"})
	}
	if p.SyncCommit == "off" {
		d.Risks = append(d.Risks, store.DurabilityRisk{Name: "synchronous_commit", Value: "off", Setting: "synchronous_commit=off",
			Loses: fmt.Sprintf("a commit returns before its WAL is on disk: a crash of PostgreSQL or of its machine loses the "+
				"transactions committed in the last %s or so (3 × wal_writer_delay %s), whose messages txinbox had already acked",
				p.asyncWindow(), p.WalWriterDelay),
			Fix: "set synchronous_commit = on where txinbox's connections get it: ALTER ROLE <txinbox's role> SET synchronous_commit = on " +
				"(or ALTER DATABASE, or postgresql.conf), and reconnect"})
	}
	d.Risks = append(d.Risks, p.replicationRisks()...)
	if len(p.Standbys) > 0 && !p.CanSeeStandbys {
		d.Unread = append(d.Unread, fmt.Sprintf("pg_stat_replication: %d standby(s) connected, but role %s may not see whether they "+
			"replicate synchronously (sync_state): GRANT pg_monitor TO %s", len(p.Standbys), p.Role, p.Role))
	}
	d.Crash, d.Failover = p.crashSentence(), p.failoverSentence()
	return d
}

// synchronous are the standbys whose commits the primary waits for.
func (p DurabilitySettings) synchronous() (sync, async []Standby) {
	for _, s := range p.Standbys {
		switch s.SyncState {
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
func (p DurabilitySettings) replicationRisks() []store.DurabilityRisk {
	sync, async := p.synchronous()
	if len(sync) > 0 && p.SyncCommit == "local" { // off: a risk already, named once
		return []store.DurabilityRisk{{Name: "synchronous_commit", Value: p.SyncCommit, Setting: "synchronous_commit=" + p.SyncCommit,
			Loses: fmt.Sprintf("commits do not wait for the synchronous standby (synchronous_standby_names = '%s'): "+
				"a failover to it loses the commits it had not received yet, whose messages txinbox had acked", p.StandbyNames),
			Fix: "set synchronous_commit = on (or remote_apply) for txinbox's role or database: ALTER ROLE <txinbox's role> SET synchronous_commit = on"}}
	}
	if len(sync) > 0 || len(async) == 0 {
		return nil
	}
	var names []string
	for _, s := range async {
		names = append(names, fmt.Sprintf("%q (%s, sync_state=%s)", s.Name, s.Addr, s.SyncState))
	}
	return []store.DurabilityRisk{{Name: "asynchronous_standby", Value: async[0].SyncState, Setting: "asynchronous replication to " + strings.Join(names, ", "),
		Loses: "no standby is synchronous (synchronous_standby_names = '" + p.StandbyNames + "'): a failover to a standby loses " +
			"the commits it had not received yet (its replication lag), whose messages txinbox had acked",
		Fix: fmt.Sprintf("name the standby in synchronous_standby_names (e.g. 'FIRST 1 (%s)') in postgresql.conf and reload, "+
			"with synchronous_commit on or remote_apply", async[0].Name)}}
}

func (p DurabilitySettings) standbyList() string {
	if len(p.Standbys) == 0 {
		return "none"
	}
	var out []string
	for _, s := range p.Standbys {
		state := s.SyncState
		if state == "" {
			state = "hidden"
		}
		out = append(out, fmt.Sprintf("%s (%s, %s)", s.Name, s.Addr, state))
	}
	return strings.Join(out, ", ")
}

// asyncWindow is how old a commit synchronous_commit=off can lose at
// most: three times wal_writer_delay.
func (p DurabilitySettings) asyncWindow() string {
	delay, err := time.ParseDuration(p.WalWriterDelay)
	if err != nil {
		return "3 × wal_writer_delay"
	}
	return (3 * delay).String()
}

func (p DurabilitySettings) crashSentence() string {
	switch {
	case p.Fsync == "off" || p.FullPageWrites == "off":
		return "a crash of PostgreSQL's machine or a power loss can lose or corrupt any committed transaction: acked messages can vanish"
	case p.SyncCommit == "off":
		return fmt.Sprintf("a crash of PostgreSQL or of its machine loses the commits of the last %s or so, whose messages were acked", p.asyncWindow())
	}
	return "a crash of PostgreSQL or of its machine loses no acked message: each commit is on disk before txinbox acks"
}

func (p DurabilitySettings) failoverSentence() string {
	sync, async := p.synchronous()
	switch {
	case len(p.Standbys) == 0:
		return "no standby replicates from this server (pg_stat_replication is empty): nothing to fail over to that txinbox " +
			"can see (a managed service's storage replication is not seen here)"
	case len(sync) > 0 && (p.SyncCommit == "local" || p.SyncCommit == "off"):
		return "a failover can lose the last commits: synchronous_commit=" + p.SyncCommit + " does not wait for the synchronous standby"
	case len(sync) > 0 && p.SyncCommit == "remote_write":
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
	return "unknown: how the standbys replicate is hidden from role " + p.Role
}

func (p DurabilitySettings) names(ss []Standby) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}
