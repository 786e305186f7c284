package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// demoCommand is txinbox demo.
type demoCommand struct {
	o   demoOptions
	log logFlags
	// invoicer runs --scenario invoicer (runInvoicerDemo): set by the
	// command list, as the invoicer scenario builds on this package.
	invoicer func(ctx context.Context, env *Env, fs *flag.FlagSet, o demoOptions) int
}

func (c *demoCommand) info() commandInfo {
	return commandInfo{Name: "demo", Summary: "run the seed's invoicing scenario with SIGKILLed consumers and count the effects",
		Description: `Runs the seed's scenario: a broker publishes InvoiceIssued events (and
re-sends a share of them), a consumer child process applies each one as a
partner_invoices row plus an outbox row in the inbox's transaction, and the
consumer is SIGKILLed at random moments, also after the side effect before
the commit and after the commit before the ack. Then it counts: any invoice
applied twice or never fails the run. Without --db it runs on a temporary
SQLite file. --scenario invoicer runs the seed end to end (Kafka, the outbox,
AS4 to a partner with its own inbox).`,
		Examples: []example{{"txinbox demo", "embedded SQLite, 1,000 invoices, 6 SIGKILLs"},
			{"txinbox demo --source kafka --messages 600 --duplicates 0.3 --crashes 9 --json", ""},
			{"txinbox demo --sabotage ack-first", "break the consumer on purpose: the count fails"}},
		ExitCodes: []exitCode{{ExitOK, "every invoice applied exactly once"},
			{ExitFailure, "an invoice applied twice or never, or the run failed"}, {ExitUsage, "bad flags"}}}
}

func (c *demoCommand) define(fs *flagSet, env *Env) {
	c.o.define(fs.FlagSet, env)
	fs.groupPrefix("Database (default: a temporary SQLite file)", "db", "schema", "table-prefix", "keep")
	fs.groupPrefix("Broker", "source", "amqp-url", "kafka-brokers", "nats-url", "sqs-endpoint")
	fs.noEnv("kafka-brokers", "nats-url", "sqs-endpoint") // serve's variables name production brokers
	fs.groupPrefix("Scenario invoicer", "scenario", "invoices", "partner-schema", "timeout")
	c.log.define(fs)
}

func (c *demoCommand) run(ctx context.Context, in *invocation) int {
	logger, err := c.log.newLogger(in.env.Stderr)
	if err != nil {
		return usageError(in.env, in.path, err.Error())
	}
	logger.Info("txinbox demo: starting", "source", c.o.source, "messages", c.o.messages, "duplicates", c.o.duplicates,
		"crashes", c.o.crashes, "scenario", c.o.invoicer.scenario)
	return runDemo(ctx, in.env, in.fs.FlagSet, c.o, c.invoicer)
}

type demoOptions struct {
	dbf        dbFlags
	source     string
	messages   int
	duplicates float64
	crashes    int
	seed       uint64
	json       bool
	keep       bool
	sabotage   string
	amqpURL    string
	external   demoExternal    // brokers given by flags instead of txinbox-brokers
	invoicer   invoicerOptions // --scenario invoicer (demo_invoicer.go)
}

// invoicerOptions are the flags of the invoicer scenario.
type invoicerOptions struct {
	scenario      string
	invoices      int
	timeout       time.Duration
	partnerSchema string
}

func (o *invoicerOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.scenario, "scenario", "", "run another scenario: invoicer (Kafka -> inbox -> INVOIC -> outbox -> AS4 partner, 3 processes SIGKILLed)")
	intFlag(fs, &o.invoices, "invoices", 200, 1, "--scenario invoicer: unique InvoiceIssued events")
	durationFlag(fs, &o.timeout, "timeout", 2*time.Minute, false, "--scenario invoicer: fail if the invoices are not all delivered by then")
	fs.StringVar(&o.partnerSchema, "partner-schema", "partner", "--scenario invoicer on PostgreSQL: the schema of the partner's tables")
}

// demoSummary is the demo's result; --json prints it as one object.
type demoSummary struct {
	Source            string         `json:"source"`
	DB                string         `json:"db"`
	Where             string         `json:"where"`
	Run               string         `json:"run"`
	Published         int            `json:"published"`
	Unique            int            `json:"unique"`
	Resent            int            `json:"resent"`
	Redelivered       int            `json:"redelivered"`
	Processed         int            `json:"processed"`
	DuplicatesSkipped int            `json:"duplicates_skipped"`
	Effects           int            `json:"effects"`
	OutboxRows        int            `json:"outbox_rows"`
	DoubleEffects     int            `json:"double_effects"`
	Lost              int            `json:"lost"`
	Crashes           int            `json:"crashes"`
	CrashPoints       map[string]int `json:"crash_points"`
	ElapsedMS         int64          `json:"elapsed_ms"`
	OK                bool           `json:"ok"`
}

// define defines the demo's flags, bound to o.
func (o *demoOptions) define(fs *flag.FlagSet, env *Env) {
	o.dbf.register(fs, env)
	fs.StringVar(&o.source, "source", "memory", "the broker: "+demoSourceNames())
	intFlag(fs, &o.messages, "messages", 1000, 1, "unique InvoiceIssued events to publish")
	fractionFlag(fs, &o.duplicates, "duplicates", 0.2, "share of events the producer publishes a second time (0 to 1)")
	intFlag(fs, &o.crashes, "crashes", 6, 0, "consumer SIGKILLs during the run")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (default: from the clock)")
	fs.BoolVar(&o.json, "json", false, "print the summary as one JSON object")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary SQLite directory")
	fs.StringVar(&o.amqpURL, "amqp-url", defaultAMQPURL, "RabbitMQ broker of --source rabbitmq")
	o.external.register(fs)
	fs.StringVar(&o.sabotage, "sabotage", "", "break the consumer on purpose, to see the checker fail: "+
		sabotageDeliveryKey+" (key on the delivery, not the message) or "+sabotageAckFirst+" (ack before the commit); "+
		"with --scenario invoicer: fresh-message-id, lost-receipts (the control) or partner-without-inbox")
	o.invoicer.register(fs)
}

// runDemo runs the demo that o describes (invoicer: --scenario invoicer).
func runDemo(ctx context.Context, env *Env, fs *flag.FlagSet, o demoOptions,
	invoicer func(context.Context, *Env, *flag.FlagSet, demoOptions) int) int {
	if o.invoicer.scenario != "" {
		return invoicer(ctx, env, fs, o)
	}
	if err := o.validate(fs); err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return ExitUsage
	}
	if o.dbf.url == "" {
		dir, err := os.MkdirTemp("", "txinbox-demo-")
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox demo:", err)
			return ExitFailure
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
		o.dbf.url = filepath.Join(dir, "inbox.db")
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	sum, err := demoSources[o.source](ctx, env, o)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return ExitFailure
	}
	if o.json {
		json.NewEncoder(env.Stdout).Encode(sum) //nolint:errcheck // stdout
	} else {
		printDemoSummary(env, sum)
	}
	if !sum.OK {
		return ExitFailure
	}
	return ExitOK
}

// demoSources are the brokers the demo runs through. Each publishes the
// plan, runs consumer child processes ("demo-consumer --source NAME"),
// SIGKILLs them and verifies the effects.
var demoSources = map[string]func(ctx context.Context, env *Env, o demoOptions) (*demoSummary, error){
	"memory": runDemoScenario,
}

func demoSourceNames() string {
	names := make([]string, 0, len(demoSources))
	for n := range demoSources {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (o *demoOptions) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case demoSources[o.source] == nil:
		return fmt.Errorf("--source %q: use one of %s", o.source, demoSourceNames())
	case o.messages < 1:
		return fmt.Errorf("--messages must be at least 1, got %d", o.messages)
	case o.duplicates < 0 || o.duplicates > 1:
		return fmt.Errorf("--duplicates must be between 0 and 1, got %g", o.duplicates)
	case o.sabotage != "" && o.sabotage != sabotageDeliveryKey && o.sabotage != sabotageAckFirst:
		return fmt.Errorf("--sabotage %q: use %s or %s", o.sabotage, sabotageDeliveryKey, sabotageAckFirst)
	case o.crashes < 0:
		return fmt.Errorf("--crashes must not be negative, got %d", o.crashes)
	}
	return nil
}

func printDemoSummary(env *Env, s *demoSummary) {
	w := env.Stdout
	fmt.Fprintf(w, "txinbox demo on %s (%s), run %s\n", s.DB, s.Where, s.Run)
	fmt.Fprintf(w, "  published           %6d  (%d unique invoices, %d re-sent by the producer)\n", s.Published, s.Unique, s.Resent)
	fmt.Fprintf(w, "  consumer crashes    %6d  SIGKILL %s\n", s.Crashes, formatCrashPoints(s.CrashPoints))
	fmt.Fprintf(w, "  redelivered         %6d  unacked deliveries sent again after a crash\n", s.Redelivered)
	fmt.Fprintf(w, "  processed           %6d\n", s.Processed)
	fmt.Fprintf(w, "  duplicates skipped  %6d\n", s.DuplicatesSkipped)
	fmt.Fprintf(w, "  effects             %6d  partner_invoices rows (%d outbox rows)\n", s.Effects, s.OutboxRows)
	fmt.Fprintf(w, "  double effects      %6d\n", s.DoubleEffects)
	fmt.Fprintf(w, "  lost                %6d\n", s.Lost)
	fmt.Fprintf(w, "  elapsed             %6.1fs\n", float64(s.ElapsedMS)/1000)
	if s.OK {
		fmt.Fprintln(w, "OK: every invoice was applied exactly once.")
	} else {
		fmt.Fprintln(w, "FAILED: some invoice was applied twice or never.")
	}
}

// demoPlan is the published stream: unique events, some published twice.
func demoPlan(o demoOptions, run string, rng *rand.Rand) (ids []string, payloads []string, stream []int) {
	for i := range o.messages {
		inv := demoInvoice{Type: "InvoiceIssued", InvoiceNo: fmt.Sprintf("INV-%s-%06d", run, i+1),
			Partner: fmt.Sprintf("PARTNER-%d", rng.IntN(5)+1), AmountCents: int64(rng.IntN(1_000_000) + 100), Run: run}
		b, _ := json.Marshal(inv) // plain struct
		ids = append(ids, fmt.Sprintf("InvoiceIssued/%s/%06d", run, i+1))
		payloads = append(payloads, string(b))
		stream = append(stream, i)
	}
	resend := int(float64(o.messages)*o.duplicates + 0.5)
	for range resend {
		// A re-send goes somewhere after the original.
		orig := rng.IntN(o.messages)
		pos := orig + 1 + rng.IntN(len(stream)-orig)
		stream = append(stream[:pos], append([]int{orig}, stream[pos:]...)...)
	}
	return ids, payloads, stream
}

func formatCrashPoints(points map[string]int) string {
	names := make([]string, 0, len(points))
	for n := range points {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", points[n], n)
	}
	return strings.Join(parts, ", ")
}
