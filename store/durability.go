package store

import (
	"context"
	"strings"
)

// DurabilityReader is the optional interface of a driver that can read
// the settings of its database that decide whether a commit survives a
// crash or a failover. txinbox acks a message (commits its Kafka offset,
// sends its AS4 receipt) once its transaction committed: a commit the
// database then loses is a message lost without a trace, since the broker
// will not deliver it again.
type DurabilityReader interface {
	// Durability reads the settings on one of the store's own connections
	// (their effective values, with the role's and the database's
	// defaults). What it could not read is in Durability.Unread, not an
	// error; the error is the database's failure to answer.
	Durability(ctx context.Context) (Durability, error)
}

// Durability is what a store read of its database's durability settings.
type Durability struct {
	// Settings are the settings read, as name and value, in the order
	// read (e.g. fsync on, synchronous_commit on).
	Settings []DurabilitySetting
	// Risks are the settings that can lose acknowledged messages, each
	// with what it can lose and how to fix it. Empty: none can.
	Risks []DurabilityRisk
	// Unread says what could not be read and why (a privilege missing):
	// what it would have shown is neither ruled in nor out.
	Unread []string
	// Crash says in one sentence what a crash (of the database server,
	// of its machine) can lose with these settings.
	Crash string
	// Failover says in one sentence what a failover to a standby can lose.
	Failover string
}

// DurabilitySetting is one setting read, e.g. fsync = on.
type DurabilitySetting struct {
	Name, Value string
}

// DurabilityRisk is one setting that can lose acknowledged messages.
type DurabilityRisk struct {
	// Name is the setting's name alone, stable for a metric's label:
	// fsync, full_page_writes, synchronous_commit, asynchronous_standby
	// (PostgreSQL), synchronous (SQLite).
	Name string
	// Value is the setting's value as read, for the same label: off,
	// local, async (a standby's sync_state), NORMAL.
	Value string
	// Setting is the setting and its value as read, e.g.
	// "synchronous_commit=off".
	Setting string
	// Loses says what it can lose, and on what event.
	Loses string
	// Fix says what to set instead.
	Fix string
}

// String is the setting, what it can lose and the fix, in one line.
func (r DurabilityRisk) String() string {
	return r.Setting + ": " + r.Loses + "; " + r.Fix
}

// Summary is one line: the risks (or that there is none), then what could
// not be read.
func (d Durability) Summary() string {
	var parts []string
	for _, r := range d.Risks {
		parts = append(parts, r.Setting)
	}
	s := "no setting loses acknowledged messages"
	if len(parts) > 0 {
		s = "acknowledged messages can be lost: " + strings.Join(parts, ", ")
	}
	if len(d.Unread) > 0 {
		s += " (not read: " + strings.Join(d.Unread, "; ") + ")"
	}
	return s
}
