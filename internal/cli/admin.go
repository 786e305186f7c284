package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
)

// adminExitCodes are the exit codes of the commands that read an inbox.
var adminExitCodes = []clikit.ExitCode{
	{Code: clikit.ExitOK, What: "done"},
	{Code: clikit.ExitFailure, What: "the database failed during the command"},
	{Code: clikit.ExitUsage, What: "bad flags or arguments, the database cannot be opened, or it has no txinbox tables (run txinbox migrate)"},
}

// listFlags are the flags of the commands that list rows.
type listFlags struct {
	scope string
	limit int
	json  bool
}

func (l *listFlags) define(fs *clikit.FlagSet) {
	fs.StringVar(&l.scope, "scope", "", "only this scope (default: all)")
	clikit.IntFlag(fs.FlagSet, &l.limit, "limit", 100, 1, "at most this many rows, newest first")
	fs.BoolVar(&l.json, "json", false, "print one JSON object per line")
}

// statusCommand is txinbox status.
type statusCommand struct {
	db             clikit.DBFlags
	scope          string
	json           bool
	retention      time.Duration
	scopeRetention string
}

func (c *statusCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "status", Summary: "count the inbox, failing messages, dead letters, drift and the outbox, in all and per scope",
		Description: `Prints the totals, the database's durability settings (what a crash or a
failover can lose: serve's start-up check) and, per scope, the inbox rows,
those received longer ago than the retention (waiting for the purge: the
purge lag), the oldest row, the messages failing (retried, not processed
yet), the live dead letters and the drift records; then the outbox backlog. The totals are the sums of the scope
rows shown. It scans the tables: run it on a replica for very large inboxes.`,
		Examples: []clikit.Example{
			{Command: "txinbox status --db postgres://localhost/billing"},
			{Command: "txinbox status --db inbox.db --scope-retention as4=90d --json", What: "AS4 rows kept 90 days, the others --retention; as JSON"},
		},
		ExitCodes: adminExitCodes}
}

func (c *statusCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	fs.StringVar(&c.scope, "scope", "", "only this scope (default: all)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object")
	clikit.DurationFlag(fs.FlagSet, &c.retention, "retention", 30*duration.Day, false, "rows received longer ago than this count as expired (waiting for the purge)")
	fs.StringVar(&c.scopeRetention, "scope-retention", "",
		"retentions of scopes that differ from --retention, as SCOPE=DURATION,... (e.g. as4=90d,kafka=45d, as serve's --as4-retention ...)")
}

func (c *statusCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	perScope, err := parseScopeRetentions(c.scopeRetention)
	if err != nil {
		return clikit.UsageError(in.Env, in.Path, "--scope-retention: "+err.Error())
	}
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	scopes, err := scopeStats(ctx, db.Admin, c.retention, perScope)
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	if c.scope != "" {
		scopes = onlyScope(in.Env.Stderr, scopes, c.scope)
	}
	ob, obErr := db.OutboxStore().Stats(ctx) // an error: the outbox table is older than the relay (migrate)
	retentionOf := func(scope string) string {
		if d, ok := perScope[scope]; ok {
			return duration.Format(d)
		}
		return duration.Format(c.retention)
	}
	du, duErr := readDurability(ctx, db)
	if c.json {
		printStatusJSON(in.Env.Stdout, db, sumScopes(scopes), scopes, retentionOf, outboxJSON(ob, obErr), durabilityJSON(du, duErr))
		return clikit.ExitOK
	}
	w := tabwriter.NewWriter(in.Env.Stdout, 0, 4, 2, ' ', 0)
	printStatusTotals(w, db, sumScopes(scopes))
	printDurability(w, du, duErr)
	printOutboxStatus(w, ob, obErr)
	printHTTPKeys(w, scopes, retentionOf)
	printScopeRows(w, scopes, len(perScope) > 0, retentionOf)
	w.Flush()
	return clikit.ExitOK
}

// onlyScope keeps the stats of one scope. A scope without rows (a typo,
// or nothing received yet) is said on w with the scopes that have rows:
// the empty table alone reads as a scope that is empty but known.
func onlyScope(w io.Writer, scopes []store.ScopeStats, scope string) []store.ScopeStats {
	var known []string
	for _, x := range scopes {
		known = append(known, x.Scope)
	}
	scopes = slices.DeleteFunc(scopes, func(x store.ScopeStats) bool { return x.Scope != scope })
	if len(scopes) == 0 {
		has := "no scope has rows"
		if len(known) > 0 {
			has = "scopes with rows: " + strings.Join(known, ", ")
		}
		fmt.Fprintf(w, "txinbox status: scope %q has no rows (%s)\n", scope, has)
	}
	return scopes
}

// sumScopes adds up the scope rows, so that the totals agree with them.
func sumScopes(scopes []store.ScopeStats) store.ScopeStats {
	var t store.ScopeStats
	for _, x := range scopes {
		t.Inbox += x.Inbox
		t.Expired += x.Expired
		t.Attempts += x.Attempts
		t.DeadLetters += x.DeadLetters
		t.Drift += x.Drift
		if !x.OldestInbox.IsZero() && (t.OldestInbox.IsZero() || x.OldestInbox.Before(t.OldestInbox)) {
			t.OldestInbox = x.OldestInbox
		}
	}
	return t
}

func printStatusTotals(w io.Writer, db *clikit.InboxDB, s store.ScopeStats) {
	fmt.Fprintf(w, "database\t%s (%s)\n", db.Where, db.Kind)
	fmt.Fprintf(w, "inbox rows\t%d (%d expired)\n", s.Inbox, s.Expired)
	if !s.OldestInbox.IsZero() {
		fmt.Fprintf(w, "oldest inbox row\t%s (%s ago)\n", s.OldestInbox.UTC().Format(time.RFC3339), duration.Format(time.Since(s.OldestInbox).Round(time.Second)))
	}
	fmt.Fprintf(w, "failing messages (retried, not processed yet)\t%d\n", s.Attempts)
	fmt.Fprintf(w, "dead letters (not dropped)\t%d\n", s.DeadLetters)
	fmt.Fprintf(w, "drift records\t%d\n", s.Drift)
}

func printScopeRows(w io.Writer, scopes []store.ScopeStats, perScope bool, retentionOf func(string) string) {
	if !perScope {
		fmt.Fprintf(w, "\nSCOPE\tINBOX\tEXPIRED (> %s)\tOLDEST\tFAILING\tDEAD LETTERS\tDRIFT\n", retentionOf(""))
	} else {
		fmt.Fprintf(w, "\nSCOPE\tINBOX\tRETENTION\tEXPIRED\tOLDEST\tFAILING\tDEAD LETTERS\tDRIFT\n")
	}
	for _, x := range scopes {
		oldest := "-"
		if !x.OldestInbox.IsZero() {
			oldest = x.OldestInbox.UTC().Format(time.RFC3339)
		}
		ret := ""
		if perScope {
			ret = retentionOf(x.Scope) + "\t"
		}
		fmt.Fprintf(w, "%s\t%d\t%s%d\t%s\t%d\t%d\t%d\n", x.Scope, x.Inbox, ret, x.Expired, oldest, x.Attempts, x.DeadLetters, x.Drift)
	}
}

// parseScopeRetentions parses SCOPE=DURATION,... ("" is none).
func parseScopeRetentions(v string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		scope, dur, ok := strings.Cut(item, "=")
		if !ok || scope == "" {
			return nil, fmt.Errorf("%q is not SCOPE=DURATION", item)
		}
		d, err := clikit.ParseRetention(dur)
		if err != nil {
			return nil, fmt.Errorf("scope %q: %w", scope, err)
		}
		out[scope] = d
	}
	return out, nil
}

// scopeStats counts per scope, each scope's expired rows against its own
// retention: one ScopeStats pass per distinct retention.
func scopeStats(ctx context.Context, admin store.Admin, def time.Duration, perScope map[string]time.Duration) ([]store.ScopeStats, error) {
	now := time.Now()
	out, err := admin.ScopeStats(ctx, now.Add(-def))
	if err != nil || len(perScope) == 0 {
		return out, err
	}
	byRetention := map[time.Duration][]store.ScopeStats{def: out}
	for i, x := range out {
		d, ok := perScope[x.Scope]
		if !ok || d == def {
			continue
		}
		if _, done := byRetention[d]; !done {
			if byRetention[d], err = admin.ScopeStats(ctx, now.Add(-d)); err != nil {
				return nil, err
			}
		}
		for _, y := range byRetention[d] {
			if y.Scope == x.Scope {
				out[i].Expired = y.Expired
			}
		}
	}
	return out, nil
}

func printStatusJSON(w io.Writer, db *clikit.InboxDB, s store.ScopeStats, scopes []store.ScopeStats, retentionOf func(string) string, ob, du any) {
	per := make([]map[string]any, len(scopes))
	for i, x := range scopes {
		per[i] = map[string]any{"scope": x.Scope, "inbox": x.Inbox, "retention": retentionOf(x.Scope), "expired": x.Expired, "oldest_inbox": clikit.TimeOrNil(x.OldestInbox),
			"failing": x.Attempts, "dead_letters": x.DeadLetters, "drift": x.Drift}
	}
	json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // stdout
		"db": db.Kind, "inbox": s.Inbox, "expired": s.Expired, "attempts": s.Attempts, "dead_letters": s.DeadLetters,
		"drift": s.Drift, "oldest_inbox": clikit.TimeOrNil(s.OldestInbox), "retention": retentionOf(""), "scopes": per, "outbox": ob,
		"durability": du, "http_keys": httpKeysJSON(scopes, retentionOf)})
}

// driftParent is txinbox drift: list and show.
func driftParent() *clikit.ParentCommand {
	return &clikit.ParentCommand{CommandInfo: clikit.CommandInfo{Name: "drift", Summary: "ids seen again with another payload: drift list|show ID",
		Description: `A drift record is written when a message id arrives again with a payload
other than the one processed: the side effect does not run again, and both
SHA-256s are kept with the source and the time.`,
		Subcommands: []clikit.Command{&driftListCommand{}, &driftShowCommand{}}, Default: "list",
		Examples: []clikit.Example{{Command: "txinbox drift list --db inbox.db --scope as4"}, {Command: "txinbox drift show 12 --db inbox.db"}}}}
}

// driftListCommand is txinbox drift list.
type driftListCommand struct {
	db   clikit.DBFlags
	list listFlags
}

func (c *driftListCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "list", Summary: "list drift records, newest first",
		Description: "Lists the drift records, newest first: id, time, scope, message id, source and\nthe first 16 hex digits of the stored and received SHA-256.",
		Examples:    []clikit.Example{{Command: "txinbox drift list --db inbox.db --limit 20 --json"}}, ExitCodes: adminExitCodes}
}

func (c *driftListCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	c.list.define(fs)
}

func (c *driftListCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	rows, err := db.Admin.ListDrift(ctx, store.ListFilter{Scope: c.list.scope, Limit: c.list.limit})
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	if c.list.json {
		enc := json.NewEncoder(in.Env.Stdout)
		for _, r := range rows {
			enc.Encode(driftJSON(r)) //nolint:errcheck // stdout
		}
		return clikit.ExitOK
	}
	w := tabwriter.NewWriter(in.Env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tDETECTED\tSCOPE\tMESSAGE ID\tSOURCE\tSTORED SHA-256\tRECEIVED SHA-256")
	for _, r := range rows {
		stored, recv := hex.EncodeToString(r.StoredHash), hex.EncodeToString(r.ReceivedHash)
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.DetectedAt.UTC().Format(time.RFC3339), r.Scope, r.MessageID,
			r.Source, stored[:min(16, len(stored))], recv[:min(16, len(recv))])
	}
	w.Flush()
	return clikit.ExitOK
}

func driftJSON(r store.DriftRecord) map[string]any {
	return map[string]any{"id": r.ID, "detected_at": r.DetectedAt.UTC(), "scope": r.Scope, "message_id": r.MessageID,
		"source": r.Source, "source_position": r.SourcePosition, "stored_hash": hex.EncodeToString(r.StoredHash),
		"received_hash": hex.EncodeToString(r.ReceivedHash)}
}

// driftShowCommand is txinbox drift show ID.
type driftShowCommand struct{ db clikit.DBFlags }

func (c *driftShowCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "show", Args: "ID", Summary: "show one drift record and the state of its message",
		Description: "Prints one drift record (an ID from drift list) as JSON, with the state of its\nmessage id: whether the inbox still holds it, and its stored SHA-256.",
		Examples:    []clikit.Example{{Command: "txinbox drift show 12 --db inbox.db"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "shown"}, {Code: clikit.ExitFailure, What: "the database failed during the command"},
			{Code: clikit.ExitUsage, What: "bad flags or arguments, no drift record with this ID, or no inbox at --db"}}}
}

func (c *driftShowCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) { c.db.Define(fs) }

func (c *driftShowCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	id, err := strconv.ParseInt(in.Args[0], 10, 64)
	if err != nil {
		return clikit.UsageError(in.Env, in.Path, fmt.Sprintf("%q is not a drift record ID (from drift list)", in.Args[0]))
	}
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	var key store.Key
	found := false
	err = db.Query(ctx, "SELECT scope, message_id FROM "+db.Tables().Drift+" WHERE id = $1", []any{id},
		[]any{&key.Scope, &key.MessageID}, func() error { found = true; return nil })
	var ins store.Inspection
	if err == nil && found {
		ins, err = db.Admin.Inspect(ctx, key)
	}
	switch {
	case err != nil:
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	case !found:
		return in.Fail(clikit.ExitUsage, "no drift record with ID %d", id)
	}
	out := map[string]any{"inbox": nil}
	for _, d := range ins.Drift {
		if d.ID == id {
			out = driftJSON(d)
		}
	}
	out["inbox"] = nil
	if ins.Inbox != nil {
		out["inbox"] = map[string]any{"payload_sha256": hex.EncodeToString(ins.Inbox.PayloadHash),
			"received_at": ins.Inbox.ReceivedAt.UTC(), "processed_at": ins.Inbox.ProcessedAt.UTC()}
	}
	return printJSON(in.Env, out)
}
