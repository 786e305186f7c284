package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/store"
)

func init() {
	register("status", "count the inbox, attempts, dead-letter and drift rows", runStatus)
	register("drift", "drift list: ids seen again with another payload", runDrift)
	register("dlq", "dead letters: dlq list|show ID|replay ID|drop ID", runDLQ)
	register("inspect", "show everything stored about one message id", runInspect)
	register("forget", "re-admit one message id (audited) so its next delivery is processed again", runForget)
}

type adminFlags struct {
	db    dbFlags
	scope string
	limit int
	json  bool
}

// parseAdmin parses the shared admin flags and opens the database.
func parseAdmin(ctx context.Context, env *Env, name string, args []string, extra func(*flag.FlagSet)) (*adminFlags, *inboxDB, *flag.FlagSet, int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f adminFlags
	f.db.register(fs, env)
	fs.StringVar(&f.scope, "scope", "", "only this scope (default: all)")
	intFlag(fs, &f.limit, "limit", 100, 1, "at most this many rows, newest first")
	fs.BoolVar(&f.json, "json", false, "print JSON lines")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, ExitUsage
	}
	if f.limit < 1 {
		fmt.Fprintf(env.Stderr, "txinbox %s: --limit must be at least 1, got %d\n", name, f.limit)
		return nil, nil, nil, ExitUsage
	}
	db, err := openMigrated(ctx, f.db, 2)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox %s: %v\n", name, err)
		return nil, nil, nil, ExitUsage
	}
	return &f, db, fs, ExitOK
}

func runStatus(ctx context.Context, env *Env, args []string) int {
	var retention, scopeRetention string
	f, db, _, code := parseAdmin(ctx, env, "status", args, func(fs *flag.FlagSet) {
		fs.StringVar(&retention, "retention", "30d", "rows received longer ago than this count as expired (waiting for the purge)")
		fs.StringVar(&scopeRetention, "scope-retention", "",
			"retentions of scopes that differ from --retention, as SCOPE=DURATION,... (e.g. as4=90d,kafka=45d, as serve's --as4-retention ...)")
	})
	if code != ExitOK {
		return code
	}
	defer db.close()
	keep, err := parseRetention(retention)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox status: --retention:", err)
		return ExitUsage
	}
	perScope, err := parseScopeRetentions(scopeRetention)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox status: --scope-retention:", err)
		return ExitUsage
	}
	s, err := db.admin.Stats(ctx)
	var scopes []store.ScopeStats
	if err == nil {
		scopes, err = scopeStats(ctx, db.admin, keep, perScope)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox status: %s: %v (did you run txinbox migrate?)\n", db.where, err)
		return ExitFailure
	}
	ob, obErr := db.outboxStore().Stats(ctx) // an error: the outbox table is older than the relay (migrate)
	if f.scope != "" {
		scopes = slices.DeleteFunc(scopes, func(x store.ScopeStats) bool { return x.Scope != f.scope })
	}
	retentionOf := func(scope string) string {
		if d, ok := perScope[scope]; ok {
			return formatDays(d)
		}
		return retention
	}
	if f.json {
		return printStatusJSON(env, db, s, scopes, retention, retentionOf, outboxJSON(ob, obErr))
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "database\t%s (%s)\n", db.where, db.kind)
	fmt.Fprintf(w, "inbox rows\t%d\n", s.Inbox)
	if !s.OldestInbox.IsZero() {
		fmt.Fprintf(w, "oldest inbox row\t%s (%s ago)\n", s.OldestInbox.UTC().Format(time.RFC3339), time.Since(s.OldestInbox).Round(time.Second))
	}
	fmt.Fprintf(w, "messages with failed attempts\t%d\n", s.Attempts)
	fmt.Fprintf(w, "dead letters\t%d\n", s.DeadLetters)
	fmt.Fprintf(w, "drift records\t%d\n", s.Drift)
	printOutboxStatus(w, ob, obErr)
	if len(perScope) == 0 {
		fmt.Fprintf(w, "\nSCOPE\tINBOX\tEXPIRED (> %s)\tOLDEST\tFAILING\tDEAD LETTERS\tDRIFT\n", retention)
	} else {
		fmt.Fprintf(w, "\nSCOPE\tINBOX\tRETENTION\tEXPIRED\tOLDEST\tFAILING\tDEAD LETTERS\tDRIFT\n")
	}
	for _, x := range scopes {
		oldest := "-"
		if !x.OldestInbox.IsZero() {
			oldest = x.OldestInbox.UTC().Format(time.RFC3339)
		}
		ret := ""
		if len(perScope) > 0 {
			ret = retentionOf(x.Scope) + "\t"
		}
		fmt.Fprintf(w, "%s\t%d\t%s%d\t%s\t%d\t%d\t%d\n", x.Scope, x.Inbox, ret, x.Expired, oldest, x.Attempts, x.DeadLetters, x.Drift)
	}
	w.Flush()
	return ExitOK
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
		d, err := parseRetention(dur)
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

func printStatusJSON(env *Env, db *inboxDB, s store.Stats, scopes []store.ScopeStats, retention string, retentionOf func(string) string, ob any) int {
	per := make([]map[string]any, len(scopes))
	for i, x := range scopes {
		per[i] = map[string]any{"scope": x.Scope, "inbox": x.Inbox, "retention": retentionOf(x.Scope), "expired": x.Expired, "oldest_inbox": timeOrNil(x.OldestInbox),
			"failing": x.Attempts, "dead_letters": x.DeadLetters, "drift": x.Drift}
	}
	json.NewEncoder(env.Stdout).Encode(map[string]any{ //nolint:errcheck // stdout
		"db": db.kind, "inbox": s.Inbox, "attempts": s.Attempts, "dead_letters": s.DeadLetters,
		"drift": s.Drift, "oldest_inbox": timeOrNil(s.OldestInbox), "retention": retention, "scopes": per, "outbox": ob})
	return ExitOK
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func runDrift(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	f, db, _, code := parseAdmin(ctx, env, "drift", args, nil)
	if code != ExitOK {
		return code
	}
	defer db.close()
	rows, err := db.admin.ListDrift(ctx, store.ListFilter{Scope: f.scope, Limit: f.limit})
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox drift: %s: %v\n", db.where, err)
		return ExitFailure
	}
	enc := json.NewEncoder(env.Stdout)
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	if !f.json {
		fmt.Fprintln(w, "ID\tDETECTED\tSCOPE\tMESSAGE ID\tSOURCE\tSTORED SHA-256\tRECEIVED SHA-256")
	}
	for _, r := range rows {
		stored, recv := hex.EncodeToString(r.StoredHash), hex.EncodeToString(r.ReceivedHash)
		if f.json {
			enc.Encode(map[string]any{"id": r.ID, "detected_at": r.DetectedAt.UTC(), "scope": r.Scope, "message_id": r.MessageID, //nolint:errcheck // stdout
				"source": r.Source, "source_position": r.SourcePosition, "stored_hash": stored, "received_hash": recv})
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.DetectedAt.UTC().Format(time.RFC3339), r.Scope, r.MessageID,
			r.Source, stored[:16], recv[:16])
	}
	w.Flush()
	return ExitOK
}
