package serve

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/outbox"
	outboxamqp "github.com/txinbox/txinbox/outbox/target/amqp"
	outboxas4 "github.com/txinbox/txinbox/outbox/target/as4"
	outboxhttp "github.com/txinbox/txinbox/outbox/target/http"
	outboxkafka "github.com/txinbox/txinbox/outbox/target/kafka"
	"github.com/txinbox/txinbox/store"
)

// RelayParent is txinbox relay: run (the default), list-failed and replay.
func RelayParent() *clikit.ParentCommand {
	return &clikit.ParentCommand{CommandInfo: clikit.CommandInfo{Name: "relay",
		Summary: "send the outbox rows to Kafka, AMQP, HTTP or an AS4 partner until SIGTERM; relay list-failed|replay ID",
		Description: `The outbox relay sends the rows that handlers wrote to the outbox table, each
marked sent only after the target confirmed it. A row that keeps failing is
marked failed: list them, and make one due again once its cause is fixed.`,
		Subcommands: []clikit.Command{&relayRunCommand{}, &relayListFailedCommand{}, &relayReplayCommand{}}, Default: "run",
		Examples: []clikit.Example{{Command: "txinbox relay --db postgres://localhost/billing --target kafka --kafka-brokers localhost:9092 --kafka-topic invoices"},
			{Command: "txinbox relay list-failed --db postgres://localhost/billing"}}}}
}

// relayFlags are the settings of a relay, shared by txinbox relay and
// serve (where each flag's name starts with relay-).
type relayFlags struct {
	prefix      string // of the flags' names, for errors
	target      string
	kafkaBroker string
	kafkaTopic  string
	amqpURL     string
	amqpExch    string
	amqpKey     string
	httpURL     string
	as4         as4Partner
	ordered     bool
	batch       int
	concurrency int
	maxAttempts int
	sendTimeout time.Duration
}

// register adds the flags, each name prefixed with prefix. (Their
// environment variables, TXINBOX_KAFKA_BROKERS or serve's
// TXINBOX_RELAY_KAFKA_BROKERS, are read by Main; env is unused.)
func (o *relayFlags) register(fs *flag.FlagSet, _ *clikit.Env, prefix string) {
	o.prefix = prefix
	fs.StringVar(&o.target, prefix+"target", "", "where outbox rows go: kafka, amqp, http or as4")
	fs.StringVar(&o.kafkaBroker, prefix+"kafka-brokers", "", "Kafka seed brokers, host:port,...")
	fs.StringVar(&o.kafkaTopic, prefix+"kafka-topic", "", "Kafka topic of rows without a topic")
	fs.StringVar(&o.amqpURL, prefix+"amqp-url", "", "RabbitMQ URL, amqp://user:pass@host:5672/")
	fs.StringVar(&o.amqpExch, prefix+"amqp-exchange", "", "AMQP exchange (default: the default exchange, where the routing key names a queue)")
	fs.StringVar(&o.amqpKey, prefix+"amqp-routing-key", "", "AMQP routing key of rows without a topic")
	fs.StringVar(&o.httpURL, prefix+"http-url", "", "URL the rows are POSTed to (Idempotency-Key: the row's stable id)")
	o.as4.register(fs, prefix)
	fs.BoolVar(&o.ordered, prefix+"ordered", false, "send the rows of one key one at a time, in order")
	clikit.IntFlag(fs, &o.batch, prefix+"batch", 32, 1, "rows per claim")
	clikit.IntFlag(fs, &o.concurrency, prefix+"concurrency", 4, 1, "sends at once")
	clikit.IntFlag(fs, &o.maxAttempts, prefix+"max-attempts", 10, 1, "sends per row before it fails for good")
	clikit.DurationFlag(fs, &o.sendTimeout, prefix+"send-timeout", 30*time.Second, false, "time allowed for one send")
}

// config is the relay's Config for target.
func (o *relayFlags) config(target outbox.Target, logger *slog.Logger) outbox.Config {
	return outbox.Config{Target: target, Ordered: o.ordered, BatchSize: o.batch, Concurrency: o.concurrency,
		MaxAttempts: o.maxAttempts, SendTimeout: o.sendTimeout, LeaseDuration: max(2*time.Minute, 4*o.sendTimeout), Logger: logger}
}

// newTarget builds the target the flags name; the returned close releases
// its connections.
func (o *relayFlags) newTarget() (outbox.Target, func(), error) {
	switch o.target {
	case "kafka":
		if o.kafkaBroker == "" {
			return nil, nil, o.flagErr("--target kafka needs --kafka-brokers")
		}
		t, err := outboxkafka.New(outboxkafka.Config{Brokers: strings.Split(o.kafkaBroker, ","), Topic: o.kafkaTopic})
		if err != nil {
			return nil, nil, err
		}
		return t, t.Close, nil
	case "amqp":
		if o.amqpURL == "" {
			return nil, nil, o.flagErr("--target amqp needs --amqp-url")
		}
		t, err := outboxamqp.New(outboxamqp.Config{URL: o.amqpURL, Exchange: o.amqpExch, RoutingKey: o.amqpKey, Channels: o.concurrency})
		if err != nil {
			return nil, nil, err
		}
		return t, func() { t.Close() }, nil
	case "http":
		if o.httpURL == "" {
			return nil, nil, o.flagErr("--target http needs --http-url")
		}
		t, err := outboxhttp.New(outboxhttp.Config{URL: o.httpURL})
		if err != nil {
			return nil, nil, err
		}
		return t, func() {}, nil
	case "as4":
		t, err := o.as4.target(o.sendTimeout)
		if err != nil {
			return nil, nil, o.flagErr(err.Error())
		}
		return t, func() {}, nil
	case "":
		return nil, nil, o.flagErr("--target is required: kafka, amqp, http or as4")
	}
	return nil, nil, o.flagErr(fmt.Sprintf("--target %q: use kafka, amqp, http or as4", o.target))
}

// flagErr is msg with each flag name given the flags' prefix.
func (o *relayFlags) flagErr(msg string) error {
	return errors.New(strings.ReplaceAll(msg, "--", "--"+o.prefix))
}

// relayRunCommand is txinbox relay (run).
type relayRunCommand struct {
	db    clikit.DBFlags
	relay relayFlags
	once  bool
	log   clikit.LogFlags
}

func (c *relayRunCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "run", Summary: "send the outbox rows until SIGTERM (the default)",
		Description: `Sends the outbox rows to --target until SIGINT or SIGTERM (or, with --once,
what is due now), each marked sent only after the target confirmed it. The
outbox tables are migrated first.`,
		Examples: []clikit.Example{{Command: "txinbox relay --db inbox.db --target http --http-url https://erp.example/invoices"},
			{Command: "txinbox relay --db inbox.db --target http --http-url https://erp.example/invoices --once", What: "send what is due, then exit"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "stopped by a signal, or (--once) sent what was due"},
			{Code: clikit.ExitFailure, What: "the database failed"}, {Code: clikit.ExitUsage, What: "bad flags, or the database cannot be opened"}}}
}

func (c *relayRunCommand) Define(fs *clikit.FlagSet, env *clikit.Env) {
	c.db.Define(fs)
	c.relay.register(fs.FlagSet, env, "")
	fs.GroupPrefix("Target", "target", "kafka-", "amqp-", "http-")
	fs.GroupPrefix("AS4 target (--target as4)", "as4-")
	fs.GroupPrefix("Sending", "ordered", "batch", "concurrency", "max-attempts", "send-timeout")
	fs.BoolVar(&c.once, "once", false, "send what is due now, then exit")
	c.log.Define(fs)
	fs.Require("target")
}

func (c *relayRunCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	env := in.Env
	logger, err := c.log.NewLogger(env.Stderr)
	if err != nil {
		return clikit.UsageError(env, in.Path, err.Error())
	}
	target, closeTarget, err := c.relay.newTarget()
	if err != nil {
		return clikit.UsageError(env, in.Path, err.Error())
	}
	defer closeTarget()
	db, err := clikit.OpenDB(ctx, c.db, int32(min(max(c.relay.concurrency, 1)+2, 64)))
	if stoppedStarting(ctx, env, in.Path, err) {
		return clikit.ExitOK
	} else if err != nil {
		return in.Fail(clikit.ExitUsage, "%v", err)
	}
	defer db.Close()
	if err := db.Admin.Migrate(ctx); stoppedStarting(ctx, env, in.Path, err) {
		return clikit.ExitOK
	} else if err != nil {
		return in.Fail(clikit.ExitFailure, "migrating %s: %v", db.Where, err)
	}
	r, err := outbox.New(db.OutboxStore(), c.relay.config(target, logger))
	if err != nil {
		return clikit.UsageError(env, in.Path, flagNames(err))
	}
	if c.once {
		n, err := r.RunOnce(ctx)
		cn := r.Counters()
		fmt.Fprintf(env.Stdout, "sent %d, retrying %d, failed %d\n", n, cn.Retried, cn.Failed)
		if err != nil && ctx.Err() == nil {
			return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
		}
		return clikit.ExitOK
	}
	logger.Info("txinbox relay: relaying the outbox", "db", db.Where, "target", c.relay.target)
	r.Run(ctx) //nolint:errcheck // nil: it runs until ctx is done
	cn := r.Counters()
	fmt.Fprintf(env.Stdout, "stopped: sent %d, retried %d, failed %d\n", cn.Sent, cn.Retried, cn.Failed)
	return clikit.ExitOK
}

// flagNames turns a Config field in an error into the flag that sets it.
func flagNames(err error) string {
	return strings.NewReplacer("outbox: ", "", "Config.BatchSize", "--batch", "Config.Concurrency", "--concurrency",
		"Config.MaxAttempts", "--max-attempts", "Config.SendTimeout", "--send-timeout").Replace(err.Error())
}

// relayListFailedCommand is txinbox relay list-failed.
type relayListFailedCommand struct {
	db    clikit.DBFlags
	limit int
	json  bool
}

func (c *relayListFailedCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "list-failed", Summary: "list the outbox rows that failed for good, newest first",
		Description: "Lists the outbox rows that failed for good, newest first: id, time, stable id\n(scope/message id/part), topic, key, attempts and last error.",
		Examples:    []clikit.Example{{Command: "txinbox relay list-failed --db inbox.db --json"}},
		ExitCodes:   []clikit.ExitCode{{Code: clikit.ExitOK, What: "listed"}, {Code: clikit.ExitFailure, What: "the database failed"}, {Code: clikit.ExitUsage, What: "bad flags, or the database cannot be opened"}}}
}

func (c *relayListFailedCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	clikit.IntFlag(fs.FlagSet, &c.limit, "limit", 100, 1, "at most this many rows, newest first")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per line")
}

func (c *relayListFailedCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	env := in.Env
	db, err := clikit.OpenDB(ctx, c.db, 2)
	if err != nil {
		return in.Fail(clikit.ExitUsage, "%v", err)
	}
	defer db.Close()
	rows, err := db.OutboxStore().ListFailed(ctx, c.limit)
	if err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	if c.json {
		enc := json.NewEncoder(env.Stdout)
		for _, r := range rows {
			enc.Encode(map[string]any{"id": r.ID, "scope": r.Scope, "message_id": r.MessageID, "part": r.Part, //nolint:errcheck // stdout
				"topic": r.Topic, "key": r.Key, "attempts": r.Attempts, "last_error": r.LastError,
				"created_at": r.CreatedAt.UTC(), "failed_at": r.FailedAt.UTC()})
		}
		return clikit.ExitOK
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tFAILED\tSTABLE ID\tTOPIC\tKEY\tATTEMPTS\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s/%s/%d\t%s\t%s\t%d\t%s\n", r.ID, r.FailedAt.UTC().Format(time.RFC3339), r.Scope, r.MessageID,
			r.Part, r.Topic, r.Key, r.Attempts, oneLine(r.LastError))
	}
	w.Flush()
	return clikit.ExitOK
}

// relayReplayCommand is txinbox relay replay ID.
type relayReplayCommand struct {
	db            clikit.DBFlags
	reason, actor string
}

func (c *relayReplayCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "replay", Args: "ID", Summary: "make a failed outbox row due again",
		Description: "Makes a failed outbox row (an ID from relay list-failed) due again: a running\nrelay sends it. Who did it and why go to the audit table (action replay-outbox).",
		Examples:    []clikit.Example{{Command: "txinbox relay replay 42 --db inbox.db --reason 'partner endpoint fixed'"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "the row is due again"}, {Code: clikit.ExitFailure, What: "the database failed"},
			{Code: clikit.ExitUsage, What: "bad flags or arguments, no failed outbox row with this ID, or the database cannot be opened"}}}
}

func (c *relayReplayCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.db.Define(fs)
	fs.StringVar(&c.reason, "reason", "", "why: kept in the audit table")
	fs.StringVar(&c.actor, "actor", clikit.DefaultActor(), "who: kept in the audit table")
	fs.Require("reason")
}

func (c *relayReplayCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	id, err := strconv.ParseInt(in.Args[0], 10, 64)
	if err != nil {
		return clikit.UsageError(in.Env, in.Path, fmt.Sprintf("%q is not an outbox row ID (from relay list-failed)", in.Args[0]))
	}
	db, err := clikit.OpenDB(ctx, c.db, 2)
	if err != nil {
		return in.Fail(clikit.ExitUsage, "%v", err)
	}
	defer db.Close()
	ok, err := outbox.ReplayAudited(ctx, db.OutboxStore(), id, store.AuditEntry{Actor: c.actor, Reason: c.reason})
	switch {
	case err != nil:
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	case !ok:
		return in.Fail(clikit.ExitUsage, "no failed outbox row with ID %d", id)
	}
	fmt.Fprintf(in.Env.Stdout, "outbox row %d is due again: a running relay sends it\n", id)
	return clikit.ExitOK
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// as4Partner is the one AS4 partner of relay --target as4: rows whose topic
// is --as4-partner (any topic when it is empty) go to --as4-url as ebMS3
// user messages whose MessageId is derived from the row's stable id.
type as4Partner struct {
	name, url, from, to, fromRole, toRole, service, serviceType, action, domain string
}

func (p *as4Partner) register(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&p.name, prefix+"as4-partner", "", "as4: the row topic sent to this partner (default: rows of any topic)")
	fs.StringVar(&p.url, prefix+"as4-url", "", "as4: the partner's AS4 endpoint URL")
	fs.StringVar(&p.from, prefix+"as4-from", "", "as4: our PartyId (type:id or id)")
	fs.StringVar(&p.to, prefix+"as4-to", "", "as4: the partner's PartyId (type:id or id)")
	fs.StringVar(&p.fromRole, prefix+"as4-from-role", "", "as4: our Role (default: the ebMS3 initiator role)")
	fs.StringVar(&p.toRole, prefix+"as4-to-role", "", "as4: the partner's Role (default: the ebMS3 responder role)")
	fs.StringVar(&p.service, prefix+"as4-service", "", "as4: CollaborationInfo Service")
	fs.StringVar(&p.serviceType, prefix+"as4-service-type", "", "as4: the Service's type attribute")
	fs.StringVar(&p.action, prefix+"as4-action", "", "as4: CollaborationInfo Action")
	fs.StringVar(&p.domain, prefix+"as4-message-id-domain", "txinbox", "as4: the domain of derived MessageIds (id@domain)")
}

func (p *as4Partner) target(timeout time.Duration) (outbox.Target, error) {
	for _, f := range []struct{ flag, v string }{{"--as4-url", p.url}, {"--as4-from", p.from}, {"--as4-to", p.to},
		{"--as4-service", p.service}, {"--as4-action", p.action}} {
		if f.v == "" {
			return nil, fmt.Errorf("--target as4 needs %s", f.flag)
		}
	}
	cfg := outboxas4.Partner{URL: p.url, From: party(p.from, p.fromRole), To: party(p.to, p.toRole),
		Service: p.service, ServiceType: p.serviceType, Action: p.action}
	t, err := outboxas4.New(outboxas4.Config{Partners: map[string]outboxas4.Partner{p.name: cfg}, MessageIDDomain: p.domain, Timeout: timeout})
	if err != nil {
		return nil, errors.New(strings.NewReplacer("Config.MessageIDDomain", "--as4-message-id-domain",
			"Config.Partners", "--as4-*", "as4target: ", "").Replace(err.Error()))
	}
	if p.name == "" {
		return anyTopic{t}, nil
	}
	return t, nil
}

// party parses "type:id" (a type may itself hold colons, as URNs do: the
// id is after the last one) or a bare id.
func party(s, role string) ebms.Party {
	id := ebms.PartyID{ID: s}
	if i := strings.LastIndexByte(s, ':'); i > 0 && i < len(s)-1 {
		id = ebms.PartyID{Type: s[:i], ID: s[i+1:]}
	}
	return ebms.Party{IDs: []ebms.PartyID{id}, Role: role}
}

// anyTopic sends rows of every topic to the one partner registered under "".
type anyTopic struct{ t *outboxas4.Target }

func (a anyTopic) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	c := *m
	c.Topic = ""
	return a.t.Send(ctx, &c)
}
