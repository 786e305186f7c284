package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
)

// dlqParent is txinbox dlq: list, show, replay and drop.
func dlqParent() *clikit.ParentCommand {
	return &clikit.ParentCommand{CommandInfo: clikit.CommandInfo{Name: "dlq", Summary: "dead letters: dlq list|show ID|replay ID|drop ID",
		Description: `A message that keeps failing, or fails with a permanent error, is dead-lettered:
its payload, headers and last error are kept, and its redeliveries are
refused. List them, show one, replay one (re-admit its message id, audited),
or drop one (mark it handled, audited).`,
		Subcommands: []clikit.Command{&dlqListCommand{}, &dlqShowCommand{}, &dlqActCommand{name: "replay"}, &dlqActCommand{name: "drop"}},
		Default:     "list",
		Examples: []clikit.Example{{Command: "txinbox dlq list --db inbox.db"}, {Command: "txinbox dlq show 7 --db inbox.db"},
			{Command: "txinbox dlq replay 7 --db inbox.db --reason 'partner fixed the VAT number'"}}}}
}

// dlqListCommand is txinbox dlq list.
type dlqListCommand struct {
	db   clikit.DBFlags
	list listFlags
	all  bool
}

func (c *dlqListCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "list", Summary: "list dead letters, newest first",
		Description: "Lists the dead letters, newest first: id, time, scope, message id, attempts,\nreason and last error. Dropped ones only with --all.",
		Examples:    []clikit.Example{{Command: "txinbox dlq list --db inbox.db --scope kafka --json"}}, ExitCodes: adminExitCodes}
}

func (c *dlqListCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	c.list.define(fs)
	fs.BoolVar(&c.all, "all", false, "include dropped dead letters")
}

func (c *dlqListCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	return dlqList(ctx, in, db, store.ListFilter{Scope: c.list.scope, Limit: c.list.limit, Dropped: c.all}, c.list.json)
}

// dlqExitCodes are the exit codes of the dlq subcommands that take an ID
// (replay's exit 1 says more: dlqReplayExitCodes).
var dlqExitCodes = []clikit.ExitCode{{Code: clikit.ExitOK, What: "done"},
	{Code: clikit.ExitFailure, What: "the database failed"},
	{Code: clikit.ExitUsage, What: "bad flags or arguments, no dead letter with this ID, or no inbox at --db"}}

// dlqReplayExitCodes are dlq replay's exit codes.
var dlqReplayExitCodes = []clikit.ExitCode{dlqExitCodes[0],
	{Code: clikit.ExitFailure, What: "the database failed, or the dead letter is stale: its message was processed after all"},
	dlqExitCodes[2]}

// dlqShowCommand is txinbox dlq show ID.
type dlqShowCommand struct{ db clikit.DBFlags }

func (c *dlqShowCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "show", Args: "ID", Summary: "show one dead letter with its payload, headers and last error",
		Description: "Prints one dead letter (an ID from dlq list) as JSON, payload included.",
		Examples:    []clikit.Example{{Command: "txinbox dlq show 7 --db inbox.db"}}, ExitCodes: dlqExitCodes}
}

func (c *dlqShowCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) { c.db.Define(fs) }

func (c *dlqShowCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, rec, code := openDeadLetter(ctx, in, c.db)
	if db == nil {
		return code
	}
	defer db.Close()
	return printJSON(in.Env, deadLetterJSON(rec))
}

// openDeadLetter opens the inbox and reads the dead letter in.args[0];
// on an error it prints it and returns a nil db and the exit status.
func openDeadLetter(ctx context.Context, in *clikit.Invocation, f clikit.DBFlags) (*clikit.InboxDB, store.DeadLetterRecord, int) {
	var rec store.DeadLetterRecord
	id, err := strconv.ParseInt(in.Args[0], 10, 64)
	if err != nil {
		return nil, rec, clikit.UsageError(in.Env, in.Path, fmt.Sprintf("%q is not a dead letter ID (from dlq list)", in.Args[0]))
	}
	db, code := f.OpenMigrated(ctx, in)
	if db == nil {
		return nil, rec, code
	}
	rec, ok, err := db.Admin.GetDeadLetter(ctx, id)
	if err != nil || !ok {
		db.Close()
		if err != nil {
			return nil, rec, in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
		}
		return nil, rec, in.Fail(clikit.ExitUsage, "no dead letter with ID %d", id)
	}
	return db, rec, clikit.ExitOK
}

// dlqActCommand is txinbox dlq replay ID and dlq drop ID.
type dlqActCommand struct {
	name   string // replay or drop
	db     clikit.DBFlags
	reason string
	actor  string
}

func (c *dlqActCommand) Info() clikit.CommandInfo {
	if c.name == "drop" {
		return clikit.CommandInfo{Name: "drop", Args: "ID", Summary: "mark a dead letter handled (audited); redeliveries stay refused",
			Description: "Hides a dead letter from dlq list; redeliveries of its message stay refused.\nWho and why are kept in the audit table.",
			Examples:    []clikit.Example{{Command: "txinbox dlq drop 7 --db inbox.db --reason 'duplicate of INV-12, settled by phone'"}}, ExitCodes: dlqExitCodes}
	}
	return clikit.CommandInfo{Name: "replay", Args: "ID", Summary: "re-admit a dead letter's message id (audited) so its next delivery is processed",
		Description: `Deletes the dead letter, the attempt count and any inbox row of its message id,
so that its next delivery runs the side effect; who and why are kept in the
audit table. Re-publish the payload (dlq show) if the broker will not deliver
it again. A stale dead letter (its message was processed after all) is
refused: replaying it would run the effect twice.`,
		Examples: []clikit.Example{{Command: "txinbox dlq replay 7 --db inbox.db --reason 'partner fixed the VAT number'"}}, ExitCodes: dlqReplayExitCodes}
}

func (c *dlqActCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	fs.StringVar(&c.reason, "reason", "", "why: kept in the audit table")
	fs.StringVar(&c.actor, "actor", clikit.DefaultActor(), "who: kept in the audit table")
	fs.Require("reason")
}

func (c *dlqActCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, rec, code := openDeadLetter(ctx, in, c.db)
	if db == nil {
		return code
	}
	defer db.Close()
	a := store.AuditEntry{Actor: c.actor, Reason: c.reason}
	var err error
	if c.name == "drop" {
		var ok bool
		if ok, err = db.Admin.DropDeadLetter(ctx, rec.ID, a); err == nil && ok {
			fmt.Fprintf(in.Env.Stdout, "dead letter %d dropped: hidden from dlq list; redeliveries of %q stay refused\n", rec.ID, rec.MessageID)
		} else if err == nil {
			fmt.Fprintf(in.Env.Stdout, "dead letter %d was already dropped\n", rec.ID)
		}
	} else {
		return dlqReplay(ctx, in, db, rec, a)
	}
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	return clikit.ExitOK
}

// dlqReplay re-admits the dead letter's message id (store.ReplayDeadLetter,
// the console's rule too). It refuses a stale dead letter, whose message
// was processed all the same (an inbox row exists: another consumer
// committed it while this one failed): replaying would delete that row and
// run the effect a second time. It refuses one without a message id, whose
// forget would touch every other such dead letter of its scope. It returns
// the exit code.
func dlqReplay(ctx context.Context, in *clikit.Invocation, db *clikit.InboxDB, rec store.DeadLetterRecord, a store.AuditEntry) int {
	_, err := store.ReplayDeadLetter(ctx, db.Admin, rec.ID, a)
	if stale, ok := errors.AsType[*store.StaleDeadLetterError](err); ok {
		return in.Fail(clikit.ExitFailure, "dead letter %d is stale: %q (scope %q) was processed at %s (its inbox row exists), "+
			"so a replay would run its effect a second time; clear the dead letter with dlq drop, or use forget to reprocess it deliberately",
			rec.ID, rec.MessageID, rec.Scope, stale.ProcessedAt.UTC().Format(time.RFC3339))
	}
	if errors.Is(err, store.ErrReplayNoID) {
		return in.Fail(clikit.ExitFailure, "dead letter %d has no message id, so nothing refuses its redeliveries: "+
			"re-publish its payload (dlq show %d), then dlq drop it", rec.ID, rec.ID)
	}
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	fmt.Fprintf(in.Env.Stdout, "dead letter %d replayable: the next delivery of %q (scope %q) will be processed; "+
		"re-publish its payload (dlq show %d) if the broker will not redeliver it\n", rec.ID, rec.MessageID, rec.Scope, rec.ID)
	return clikit.ExitOK
}

func dlqList(ctx context.Context, in *clikit.Invocation, db *clikit.InboxDB, lf store.ListFilter, asJSON bool) int {
	env := in.Env
	rows, err := db.Admin.ListDeadLetters(ctx, lf)
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		for _, r := range rows {
			enc.Encode(deadLetterJSON(r)) //nolint:errcheck // stdout
		}
		return clikit.ExitOK
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAT\tSCOPE\tMESSAGE ID\tATTEMPTS\tREASON\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.DeadLetteredAt.UTC().Format(time.RFC3339), r.Scope,
			r.MessageID, r.Attempts, r.Reason, r.LastError)
	}
	w.Flush()
	return clikit.ExitOK
}

func deadLetterJSON(r store.DeadLetterRecord) map[string]any {
	return map[string]any{"id": r.ID, "dead_lettered_at": r.DeadLetteredAt.UTC(), "scope": r.Scope,
		"message_id": r.MessageID, "source": r.Source, "source_position": r.SourcePosition, "partition_key": r.PartitionKey,
		"attempts": r.Attempts, "reason": r.Reason, "last_error": r.LastError, "headers": json.RawMessage(r.HeadersJSON),
		"payload": string(r.Payload), "payload_sha256": hex.EncodeToString(r.PayloadHash), "received_at": r.ReceivedAt.UTC(),
		"dropped_at": clikit.TimeOrNil(r.DroppedAt)}
}

func printJSON(env *clikit.Env, v any) int {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v) //nolint:errcheck // stdout
	return clikit.ExitOK
}

// inspectCommand is txinbox inspect.
type inspectCommand struct {
	db    clikit.DBFlags
	scope string
}

func (c *inspectCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "inspect", Args: "MESSAGE-ID", Summary: "show everything stored about one message id",
		Description: `Prints, as JSON, the inbox row (payload SHA-256, source, times), the attempt
count and last error, the dead letter and the drift records of one message
id, and its state: processed, failing, dead-lettered, or unknown (never
processed, or purged).`,
		Examples: []clikit.Example{{Command: "txinbox inspect --db inbox.db --scope as4 'uuid-123@partner.example'"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "something is stored for the id"}, {Code: clikit.ExitFailure, What: "nothing is stored for the id, or the database failed"},
			{Code: clikit.ExitUsage, What: "bad flags or arguments, or no inbox at --db"}}}
}

func (c *inspectCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	fs.StringVar(&c.scope, "scope", "", "the message's scope (e.g. as4, or a source's)")
	fs.Require("scope")
}

func (c *inspectCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	ins, err := db.Admin.Inspect(ctx, store.Key{Scope: c.scope, MessageID: in.Args[0]})
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	out := inspection(ins)
	covered := false
	if ins.Inbox == nil && ins.DeadLetter == nil {
		if wmState, wm, known, processed := watermarkState(ctx, db, c.scope, ins.MessageID); known {
			out["state"], out["watermark"], covered = wmState, wm, processed
		}
	}
	code = printJSON(in.Env, out)
	if ins.Inbox == nil && ins.Attempts == nil && ins.DeadLetter == nil && len(ins.Drift) == 0 && !covered {
		return clikit.ExitFailure // scripts can tell "nothing stored" apart
	}
	return code
}

// inspection is inspect's JSON of what is stored about one key.
func inspection(in store.Inspection) map[string]any {
	out := map[string]any{"scope": in.Scope, "message_id": in.MessageID, "inbox": nil, "attempts": nil, "dead_letter": nil}
	state := "unknown: never processed, or purged"
	if in.Inbox != nil {
		state = "processed"
		out["inbox"] = map[string]any{"source": in.Inbox.Source, "source_position": in.Inbox.SourcePosition,
			"partition_key": in.Inbox.PartitionKey, "payload_sha256": hex.EncodeToString(in.Inbox.PayloadHash),
			"received_at": in.Inbox.ReceivedAt.UTC(), "processed_at": in.Inbox.ProcessedAt.UTC()}
		if in.Inbox.Reply != nil {
			out["inbox"].(map[string]any)["reply"] = replyJSON(in.Inbox.Reply)
		}
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
	return out
}

// forgetCommand is txinbox forget.
type forgetCommand struct {
	db                   clikit.DBFlags
	scope, reason, actor string
}

func (c *forgetCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "forget", Args: "MESSAGE-ID", Summary: "re-admit one message id (audited) so its next delivery is processed again",
		Description: `Deletes the id's inbox row, attempt count and dead letter, so that its next
delivery runs the side effect again, and writes who did it and why to the
audit table.`,
		Examples: []clikit.Example{{Command: "txinbox forget --db inbox.db --scope kafka --reason 'resend INV-1 after the ERP restore' INV-1"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "forgotten"}, {Code: clikit.ExitFailure, What: "nothing was stored for the id, or the database failed"},
			{Code: clikit.ExitUsage, What: "bad flags or arguments, or no inbox at --db"}}}
}

func (c *forgetCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	fs.StringVar(&c.scope, "scope", "", "the message's scope")
	fs.StringVar(&c.reason, "reason", "", "why the message must be processed again (audited)")
	fs.StringVar(&c.actor, "actor", clikit.DefaultActor(), "who decided (audited)")
	fs.Require("scope", "reason")
}

func (c *forgetCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, code := c.db.OpenMigrated(ctx, in)
	if db == nil {
		return code
	}
	defer db.Close()
	key := store.Key{Scope: c.scope, MessageID: in.Args[0]}
	ok, err := db.Admin.Forget(ctx, key, store.AuditEntry{Actor: c.actor, Reason: c.reason})
	switch {
	case err != nil:
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	case !ok:
		msg := fmt.Sprintf("nothing stored for %q in scope %q", key.MessageID, key.Scope)
		if state, _, known, _ := watermarkState(ctx, db, key.Scope, key.MessageID); known {
			msg += fmt.Sprintf("; with offsets as the inbox there is no row to forget: %s; "+
				"to process it again, move the group's offset and the watermark (txinbox_checkpoints) back", state)
		}
		return in.Fail(clikit.ExitFailure, "%s", msg)
	}
	fmt.Fprintf(in.Env.Stdout, "forgot %q in scope %q: its next delivery will be processed again (audited: %s)\n", key.MessageID, key.Scope, c.reason)
	return clikit.ExitOK
}
