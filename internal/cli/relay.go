package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/outbox"
	outboxamqp "github.com/txinbox/txinbox/outbox/target/amqp"
	outboxas4 "github.com/txinbox/txinbox/outbox/target/as4"
	outboxhttp "github.com/txinbox/txinbox/outbox/target/http"
	outboxkafka "github.com/txinbox/txinbox/outbox/target/kafka"
)

func init() {
	register("relay", "send the outbox rows to Kafka, AMQP, HTTP or an AS4 partner until SIGTERM; relay list-failed|replay ID", runRelay)
}

// relayOptions configures the relay command; each field is one flag.
type relayOptions struct {
	db    dbFlags
	relay relayFlags
	once  bool
	limit int
	json  bool
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

// register adds the flags, each name prefixed with prefix.
func (o *relayFlags) register(fs *flag.FlagSet, env *Env, prefix string) {
	o.prefix = prefix
	fs.StringVar(&o.target, prefix+"target", "", "where outbox rows go: kafka, amqp, http or as4")
	// The command's own flags default to the usual environment; serve's
	// relay-* ones are set by their own TXINBOX_RELAY_* (applyConfig).
	envDefault := func(name string) string {
		if prefix != "" {
			return ""
		}
		return env.Getenv(name)
	}
	fs.StringVar(&o.kafkaBroker, prefix+"kafka-brokers", envDefault("TXINBOX_KAFKA_BROKERS"), "Kafka seed brokers, host:port,... (env TXINBOX_KAFKA_BROKERS)")
	fs.StringVar(&o.kafkaTopic, prefix+"kafka-topic", "", "Kafka topic of rows without a topic")
	fs.StringVar(&o.amqpURL, prefix+"amqp-url", envDefault("TXINBOX_AMQP_URL"), "RabbitMQ URL, amqp://user:pass@host:5672/ (env TXINBOX_AMQP_URL)")
	fs.StringVar(&o.amqpExch, prefix+"amqp-exchange", "", "AMQP exchange (default: the default exchange, where the routing key names a queue)")
	fs.StringVar(&o.amqpKey, prefix+"amqp-routing-key", "", "AMQP routing key of rows without a topic")
	fs.StringVar(&o.httpURL, prefix+"http-url", "", "URL the rows are POSTed to (Idempotency-Key: the row's stable id)")
	o.as4.register(fs, prefix)
	fs.BoolVar(&o.ordered, prefix+"ordered", false, "send the rows of one key one at a time, in order")
	intFlag(fs, &o.batch, prefix+"batch", 32, 1, "rows per claim")
	intFlag(fs, &o.concurrency, prefix+"concurrency", 4, 1, "sends at once")
	intFlag(fs, &o.maxAttempts, prefix+"max-attempts", 10, 1, "sends per row before it fails for good")
	durationFlag(fs, &o.sendTimeout, prefix+"send-timeout", 30*time.Second, false, "time allowed for one send")
}

// config is the relay's Config for target.
func (o *relayFlags) config(target outbox.Target, logger *slog.Logger) outbox.Config {
	return outbox.Config{Target: target, Ordered: o.ordered, BatchSize: o.batch, Concurrency: o.concurrency,
		MaxAttempts: o.maxAttempts, SendTimeout: o.sendTimeout, LeaseDuration: max(2*time.Minute, 4*o.sendTimeout), Logger: logger}
}

func parseRelayFlags(env *Env, name string, args []string) (*relayOptions, *flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var o relayOptions
	o.db.register(fs, env)
	o.relay.register(fs, env, "")
	fs.BoolVar(&o.once, "once", false, "send what is due now, then exit")
	intFlag(fs, &o.limit, "limit", 100, 1, "list-failed: at most this many rows, newest first")
	fs.BoolVar(&o.json, "json", false, "list-failed: print JSON lines")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	return &o, fs, nil
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

// outboxStore is the outbox table of db.
func (db *inboxDB) outboxStore() outbox.Store {
	if db.pg != nil {
		return outbox.PostgreSQL(db.pg)
	}
	return outbox.SQLite(db.lite)
}

func runRelay(ctx context.Context, env *Env, args []string) int {
	sub := "run"
	if len(args) > 0 && (args[0] == "list-failed" || args[0] == "replay") {
		sub, args = args[0], args[1:]
	} else if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		fmt.Fprintf(env.Stderr, "txinbox relay: unknown subcommand %q: use list-failed or replay ID (or flags to run)\n", args[0])
		return ExitUsage
	}
	name := strings.TrimSuffix("relay "+sub, " run")
	o, fs, err := parseRelayFlags(env, name, args)
	if err != nil {
		return ExitUsage
	}
	var target outbox.Target
	if sub == "run" {
		var closeTarget func()
		if target, closeTarget, err = o.relay.newTarget(); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox %s: %v\n", name, err)
			return ExitUsage
		}
		defer closeTarget()
	}
	db, err := openDB(ctx, o.db, int32(min(max(o.relay.concurrency, 1)+2, 64)))
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox %s: %v\n", name, err)
		return ExitUsage
	}
	defer db.close()
	st := db.outboxStore()
	switch sub {
	case "list-failed":
		return relayListFailed(ctx, env, db, st, o)
	case "replay":
		return relayReplay(ctx, env, db, st, fs)
	}
	if err := db.admin.Migrate(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "txinbox relay: migrating %s: %v\n", db.where, err)
		return ExitFailure
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	r, err := outbox.New(st, o.relay.config(target, logger))
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox relay:", flagNames(err))
		return ExitUsage
	}
	if o.once {
		n, err := r.RunOnce(ctx)
		c := r.Counters()
		fmt.Fprintf(env.Stdout, "sent %d, retrying %d, failed %d\n", n, c.Retried, c.Failed)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(env.Stderr, "txinbox relay: %s: %v\n", db.where, err)
			return ExitFailure
		}
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "relaying the outbox of %s to %s\n", db.where, o.relay.target)
	r.Run(ctx) //nolint:errcheck // nil: it runs until ctx is done
	c := r.Counters()
	fmt.Fprintf(env.Stdout, "stopped: sent %d, retried %d, failed %d\n", c.Sent, c.Retried, c.Failed)
	return ExitOK
}

// flagNames turns a Config field in an error into the flag that sets it.
func flagNames(err error) string {
	return strings.NewReplacer("outbox: ", "", "Config.BatchSize", "--batch", "Config.Concurrency", "--concurrency",
		"Config.MaxAttempts", "--max-attempts", "Config.SendTimeout", "--send-timeout").Replace(err.Error())
}

func relayListFailed(ctx context.Context, env *Env, db *inboxDB, st outbox.Store, o *relayOptions) int {
	rows, err := st.ListFailed(ctx, o.limit)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox relay list-failed: %s: %v\n", db.where, err)
		return ExitFailure
	}
	if o.json {
		enc := json.NewEncoder(env.Stdout)
		for _, r := range rows {
			enc.Encode(map[string]any{"id": r.ID, "scope": r.Scope, "message_id": r.MessageID, "part": r.Part, //nolint:errcheck // stdout
				"topic": r.Topic, "key": r.Key, "attempts": r.Attempts, "last_error": r.LastError,
				"created_at": r.CreatedAt.UTC(), "failed_at": r.FailedAt.UTC()})
		}
		return ExitOK
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tFAILED\tSTABLE ID\tTOPIC\tKEY\tATTEMPTS\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s/%s/%d\t%s\t%s\t%d\t%s\n", r.ID, r.FailedAt.UTC().Format(time.RFC3339), r.Scope, r.MessageID,
			r.Part, r.Topic, r.Key, r.Attempts, oneLine(r.LastError))
	}
	w.Flush()
	return ExitOK
}

func relayReplay(ctx context.Context, env *Env, db *inboxDB, st outbox.Store, fs *flag.FlagSet) int {
	if fs.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "txinbox relay replay: give one outbox row ID (from relay list-failed)")
		return ExitUsage
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox relay replay: %q is not an outbox row ID\n", fs.Arg(0))
		return ExitUsage
	}
	ok, err := st.Replay(ctx, id)
	switch {
	case err != nil:
		fmt.Fprintf(env.Stderr, "txinbox relay replay: %s: %v\n", db.where, err)
		return ExitFailure
	case !ok:
		fmt.Fprintf(env.Stderr, "txinbox relay replay: no failed outbox row with ID %d\n", id)
		return ExitUsage
	}
	fmt.Fprintf(env.Stdout, "outbox row %d is due again: a running relay sends it\n", id)
	return ExitOK
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// printOutboxStatus is the outbox part of txinbox status.
func printOutboxStatus(w io.Writer, s outbox.Stats, err error) {
	if err != nil {
		fmt.Fprintf(w, "outbox\tunavailable: %v\n", err)
		return
	}
	fmt.Fprintf(w, "outbox unsent (backlog)\t%d (%d retrying)\n", s.Unsent, s.Retrying)
	if !s.OldestUnsent.IsZero() {
		fmt.Fprintf(w, "oldest unsent outbox row\t%s (%s ago)\n", s.OldestUnsent.UTC().Format(time.RFC3339),
			time.Since(s.OldestUnsent).Round(time.Second))
	}
	fmt.Fprintf(w, "outbox failed\t%d\n", s.Failed)
	fmt.Fprintf(w, "outbox sent (not purged)\t%d\n", s.Sent)
}

// outboxJSON is the outbox part of txinbox status --json.
func outboxJSON(s outbox.Stats, err error) any {
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	age := any(nil)
	if !s.OldestUnsent.IsZero() {
		age = time.Since(s.OldestUnsent).Seconds()
	}
	return map[string]any{"unsent": s.Unsent, "retrying": s.Retrying, "oldest_unsent": timeOrNil(s.OldestUnsent),
		"oldest_unsent_age_seconds": age, "failed": s.Failed, "sent": s.Sent}
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
