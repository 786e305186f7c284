package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os/user"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/store"
)

func runDLQ(ctx context.Context, env *Env, args []string) int {
	sub := "list"
	if len(args) > 0 && (args[0] == "list" || args[0] == "show" || args[0] == "replay" || args[0] == "drop") {
		sub, args = args[0], args[1:]
	} else if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		fmt.Fprintf(env.Stderr, "txinbox dlq: unknown subcommand %q: use list, show ID, replay ID or drop ID\n", args[0])
		return ExitUsage
	}
	var reason, actor string
	var all bool
	f, db, fs, code := parseAdmin(ctx, env, "dlq "+sub, args, func(fs *flag.FlagSet) {
		fs.StringVar(&reason, "reason", "", "why (replay, drop): kept in the audit table")
		fs.StringVar(&actor, "actor", defaultActor(), "who (replay, drop): kept in the audit table")
		fs.BoolVar(&all, "all", false, "list: include dropped dead letters")
	})
	if code != ExitOK {
		return code
	}
	defer db.close()
	if sub == "list" {
		return dlqList(ctx, env, db, store.ListFilter{Scope: f.scope, Limit: f.limit, Dropped: all}, f.json)
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: give one dead letter ID (from dlq list)\n", sub)
		return ExitUsage
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: %q is not a dead letter ID\n", sub, fs.Arg(0))
		return ExitUsage
	}
	rec, ok, err := db.admin.GetDeadLetter(ctx, id)
	switch {
	case err != nil:
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: %s: %v\n", sub, db.where, err)
		return ExitFailure
	case !ok:
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: no dead letter with ID %d\n", sub, id)
		return ExitUsage
	case sub == "show":
		return printJSON(env, deadLetterJSON(rec))
	case reason == "":
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: --reason is required (it is kept in the audit table)\n", sub)
		return ExitUsage
	}
	a := store.AuditEntry{Actor: actor, Reason: reason}
	if sub == "drop" {
		if ok, err = db.admin.DropDeadLetter(ctx, id, a); err == nil && ok {
			fmt.Fprintf(env.Stdout, "dead letter %d dropped: hidden from dlq list; redeliveries of %q stay refused\n", id, rec.MessageID)
		} else if err == nil {
			fmt.Fprintf(env.Stdout, "dead letter %d was already dropped\n", id)
		}
	} else if code, done := dlqReplayStale(ctx, env, db, rec); done {
		return code
	} else if _, err = db.admin.Forget(ctx, rec.Key, a); err == nil {
		fmt.Fprintf(env.Stdout, "dead letter %d replayable: the next delivery of %q (scope %q) will be processed; "+
			"re-publish its payload (dlq show %d) if the broker will not redeliver it\n", id, rec.MessageID, rec.Scope, id)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox dlq %s: %s: %v\n", sub, db.where, err)
		return ExitFailure
	}
	return ExitOK
}

// dlqReplayStale refuses to replay a dead letter whose message was processed
// all the same (an inbox row exists: another consumer committed it while
// this one failed, or before the dead letter was recorded). Replaying would
// delete that inbox row and run the effect a second time on the next
// delivery. It reports whether it answered, and with which exit code.
func dlqReplayStale(ctx context.Context, env *Env, db *inboxDB, rec store.DeadLetterRecord) (int, bool) {
	in, err := db.admin.Inspect(ctx, rec.Key)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox dlq replay: %s: %v\n", db.where, err)
		return ExitFailure, true
	}
	if in.Inbox == nil {
		return 0, false
	}
	fmt.Fprintf(env.Stderr, "txinbox dlq replay: dead letter %d is stale: %q (scope %q) was processed at %s (its inbox row exists), "+
		"so a replay would run its effect a second time; clear the dead letter with dlq drop, or use forget to reprocess it deliberately\n",
		rec.ID, rec.MessageID, rec.Scope, in.Inbox.ProcessedAt.UTC().Format(time.RFC3339))
	return ExitFailure, true
}

func dlqList(ctx context.Context, env *Env, db *inboxDB, lf store.ListFilter, asJSON bool) int {
	rows, err := db.admin.ListDeadLetters(ctx, lf)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox dlq list: %s: %v\n", db.where, err)
		return ExitFailure
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		for _, r := range rows {
			enc.Encode(deadLetterJSON(r)) //nolint:errcheck // stdout
		}
		return ExitOK
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAT\tSCOPE\tMESSAGE ID\tATTEMPTS\tREASON\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.DeadLetteredAt.UTC().Format(time.RFC3339), r.Scope,
			r.MessageID, r.Attempts, r.Reason, r.LastError)
	}
	w.Flush()
	return ExitOK
}

func deadLetterJSON(r store.DeadLetterRecord) map[string]any {
	return map[string]any{"id": r.ID, "dead_lettered_at": r.DeadLetteredAt.UTC(), "scope": r.Scope,
		"message_id": r.MessageID, "source": r.Source, "source_position": r.SourcePosition, "partition_key": r.PartitionKey,
		"attempts": r.Attempts, "reason": r.Reason, "last_error": r.LastError, "headers": json.RawMessage(r.HeadersJSON),
		"payload": string(r.Payload), "payload_sha256": hex.EncodeToString(r.PayloadHash), "received_at": r.ReceivedAt.UTC(),
		"dropped_at": timeOrNil(r.DroppedAt)}
}

func printJSON(env *Env, v any) int {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v) //nolint:errcheck // stdout
	return ExitOK
}

func defaultActor() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

func runInspect(ctx context.Context, env *Env, args []string) int {
	f, db, fs, code := parseAdmin(ctx, env, "inspect", args, nil)
	if code != ExitOK {
		return code
	}
	defer db.close()
	if fs.NArg() != 1 || f.scope == "" {
		fmt.Fprintln(env.Stderr, "txinbox inspect: usage: txinbox inspect --db URL --scope SCOPE MESSAGE-ID")
		return ExitUsage
	}
	in, err := db.admin.Inspect(ctx, store.Key{Scope: f.scope, MessageID: fs.Arg(0)})
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox inspect: %s: %v\n", db.where, err)
		return ExitFailure
	}
	out := map[string]any{"scope": in.Scope, "message_id": in.MessageID, "inbox": nil, "attempts": nil, "dead_letter": nil}
	state := "unknown: never processed, or purged"
	if in.Inbox != nil {
		state = "processed"
		out["inbox"] = map[string]any{"source": in.Inbox.Source, "source_position": in.Inbox.SourcePosition,
			"partition_key": in.Inbox.PartitionKey, "payload_sha256": hex.EncodeToString(in.Inbox.PayloadHash),
			"received_at": in.Inbox.ReceivedAt.UTC(), "processed_at": in.Inbox.ProcessedAt.UTC()}
	}
	if in.Attempts != nil {
		if in.Inbox == nil {
			state = "failing: will be retried"
		}
		out["attempts"] = map[string]any{"attempts": in.Attempts.Attempts, "last_error": in.Attempts.LastError,
			"first_failed_at": in.Attempts.FirstFailedAt.UTC(), "last_failed_at": in.Attempts.LastFailedAt.UTC()}
	}
	if in.DeadLetter != nil {
		state = "dead-lettered"
		if in.Inbox != nil { // redeliveries are skipped as duplicates of the inbox row
			state = "processed (stale dead letter: drop it)"
		}
		out["dead_letter"] = deadLetterJSON(*in.DeadLetter)
	}
	drift := []map[string]any{}
	for _, d := range in.Drift {
		drift = append(drift, map[string]any{"id": d.ID, "detected_at": d.DetectedAt.UTC(), "source": d.Source,
			"stored_sha256": hex.EncodeToString(d.StoredHash), "received_sha256": hex.EncodeToString(d.ReceivedHash)})
	}
	out["drift"], out["state"] = drift, state
	covered := false
	if in.Inbox == nil && in.DeadLetter == nil {
		if wmState, wm, known, processed := watermarkState(ctx, db, f.scope, in.MessageID); known {
			out["state"], out["watermark"], covered = wmState, wm, processed
		}
	}
	code = printJSON(env, out)
	if in.Inbox == nil && in.Attempts == nil && in.DeadLetter == nil && len(in.Drift) == 0 && !covered {
		return ExitFailure // scripts can tell "nothing stored" apart
	}
	return code
}

func runForget(ctx context.Context, env *Env, args []string) int {
	var reason, actor string
	f, db, fs, code := parseAdmin(ctx, env, "forget", args, func(fs *flag.FlagSet) {
		fs.StringVar(&reason, "reason", "", "why the message must be processed again (required; audited)")
		fs.StringVar(&actor, "actor", defaultActor(), "who decided (audited)")
	})
	if code != ExitOK {
		return code
	}
	defer db.close()
	if fs.NArg() != 1 || f.scope == "" || reason == "" {
		fmt.Fprintln(env.Stderr, "txinbox forget: usage: txinbox forget --db URL --scope SCOPE --reason TEXT MESSAGE-ID")
		return ExitUsage
	}
	key := store.Key{Scope: f.scope, MessageID: fs.Arg(0)}
	ok, err := db.admin.Forget(ctx, key, store.AuditEntry{Actor: actor, Reason: reason})
	switch {
	case err != nil:
		fmt.Fprintf(env.Stderr, "txinbox forget: %s: %v\n", db.where, err)
		return ExitFailure
	case !ok:
		fmt.Fprintf(env.Stderr, "txinbox forget: nothing stored for %q in scope %q\n", key.MessageID, key.Scope)
		if state, _, known, _ := watermarkState(ctx, db, key.Scope, key.MessageID); known {
			fmt.Fprintf(env.Stderr, "txinbox forget: with offsets as the inbox there is no row to forget: %s; "+
				"to process it again, move the group's offset and the watermark (txinbox_checkpoints) back\n", state)
		}
		return ExitFailure
	}
	fmt.Fprintf(env.Stdout, "forgot %q in scope %q: its next delivery will be processed again (audited: %s)\n", key.MessageID, key.Scope, reason)
	return ExitOK
}
