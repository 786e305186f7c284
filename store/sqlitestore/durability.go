package sqlitestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/store"
)

var _ store.DurabilityReader = (*Driver)(nil)

// Durability implements store.DurabilityReader: PRAGMA synchronous and
// journal_mode. FULL (Open's default) or EXTRA flushes each commit before
// txinbox acks; NORMAL in WAL mode loses the last commits on a crash of the
// machine or a power loss (a crash of the process loses nothing), OFF can
// lose or corrupt any of them. SQLite has no standby: a failover does not
// apply.
func (d *Driver) Durability(ctx context.Context) (store.Durability, error) {
	var level int
	var journal string
	if err := d.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level); err != nil {
		return store.Durability{}, fmt.Errorf("sqlitestore: reading PRAGMA synchronous: %w", err)
	}
	if err := d.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journal); err != nil {
		return store.Durability{}, fmt.Errorf("sqlitestore: reading PRAGMA journal_mode: %w", err)
	}
	name := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[level]
	journal = strings.ToLower(journal)
	out := store.Durability{
		Settings: []store.DurabilitySetting{{Name: "synchronous", Value: name}, {Name: "journal_mode", Value: journal}},
		Crash:    "a crash of the process or of its machine loses no acked message: each commit is on disk before txinbox acks",
		Failover: "SQLite has no standby: a failover does not apply (a copy of the file is as old as the copy)",
	}
	fix := `open the store with sqlitestore.Options{Synchronous: "FULL"} (the default)`
	switch {
	case level == 0:
		out.Risks = []store.DurabilityRisk{{Name: "synchronous", Value: "OFF", Setting: "synchronous=OFF",
			Loses: "SQLite does not flush its writes: a crash of the machine or a power loss can lose or corrupt commits whose " +
				"messages txinbox had acked", Fix: fix}}
		out.Crash = "a crash of the machine or a power loss can lose or corrupt any committed transaction: acked messages can vanish"
	case level == 1 && journal == "wal":
		out.Risks = []store.DurabilityRisk{{Name: "synchronous", Value: "NORMAL", Setting: "synchronous=NORMAL",
			Loses: "in WAL mode a commit is flushed at the next checkpoint only: a crash of the machine or a power loss loses " +
				"the last commits, whose messages txinbox had acked (a crash of the process alone loses nothing)", Fix: fix}}
		out.Crash = "a crash of the process loses nothing; a crash of the machine or a power loss loses the last commits, whose messages were acked"
	}
	return out, nil
}
