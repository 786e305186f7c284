package demo

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

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// Command is txinbox demo.
type Command struct {
	o   Options
	log clikit.LogFlags
	// Invoicer runs --scenario invoicer (invoicerdemo.Run): set by the
	// command list, as the invoicer scenario builds on this package.
	Invoicer func(ctx context.Context, env *clikit.Env, fs *flag.FlagSet, o Options) int
}

// Info describes txinbox demo for help and completion.
func (c *Command) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "demo", Summary: "run the seed's invoicing scenario with SIGKILLed consumers and count the effects",
		Description: `Runs the seed's scenario: a broker publishes InvoiceIssued events (and
re-sends a share of them), a consumer child process applies each one as a
partner_invoices row plus an outbox row in the inbox's transaction, and the
consumer is SIGKILLed at random moments, also after the side effect before
the commit and after the commit before the ack. Then it counts: any invoice
applied twice or never fails the run. Without --db it runs on a temporary
SQLite file. --scenario invoicer runs the seed end to end (Kafka, the outbox,
AS4 to a partner with its own inbox).`,
		Examples: []clikit.Example{{Command: "txinbox demo", What: "embedded SQLite, 1,000 invoices, 6 SIGKILLs"},
			{Command: "txinbox demo --source kafka --messages 600 --duplicates 0.3 --crashes 9 --json"},
			{Command: "txinbox demo --sabotage ack-first", What: "break the consumer on purpose: the count fails"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "every invoice applied exactly once"},
			{Code: clikit.ExitFailure, What: "an invoice applied twice or never, or the run failed"}, {Code: clikit.ExitUsage, What: "bad flags"}}}
}

// Define defines the flags of txinbox demo.
func (c *Command) Define(fs *clikit.FlagSet, env *clikit.Env) {
	c.o.define(fs.FlagSet, env)
	fs.GroupPrefix("Database (default: a temporary SQLite file)", "db", "schema", "table-prefix", "keep")
	fs.GroupPrefix("Broker", "source", "amqp-url", "kafka-brokers", "nats-url", "sqs-endpoint")
	fs.NoEnv("kafka-brokers", "nats-url", "sqs-endpoint") // serve's variables name production brokers
	fs.GroupPrefix("Scenario invoicer", "scenario", "invoices", "partner-schema", "timeout")
	c.log.Define(fs)
}

// Run runs txinbox demo with the flags parsed.
func (c *Command) Run(ctx context.Context, in *clikit.Invocation) int {
	logger, err := c.log.NewLogger(in.Env.Stderr)
	if err != nil {
		return clikit.UsageError(in.Env, in.Path, err.Error())
	}
	logger.Info("txinbox demo: starting", "source", c.o.Source, "messages", c.o.Messages, "duplicates", c.o.Duplicates,
		"crashes", c.o.Crashes, "scenario", c.o.Invoicer.Scenario)
	return runDemo(ctx, in.Env, in.Flags.FlagSet, c.o, c.Invoicer)
}

// Options are the flags of txinbox demo, each field the flag of its name
// (DB: --db, --schema and --table-prefix); the invoicer scenario (package
// invoicerdemo) reads them too.
type Options struct {
	DB         clikit.DBFlags
	Source     string
	Messages   int
	Duplicates float64
	Crashes    int
	Seed       uint64
	JSON       bool
	Keep       bool
	Sabotage   string
	amqpURL    string
	External   demoExternal    // brokers given by flags instead of txinbox-brokers
	Invoicer   InvoicerOptions // --scenario invoicer (package invoicerdemo)
}

// InvoicerOptions are the flags of the invoicer scenario, each field the
// flag of its name (--scenario, --invoices, --timeout, --partner-schema).
type InvoicerOptions struct {
	Scenario      string
	Invoices      int
	Timeout       time.Duration
	PartnerSchema string
}

func (o *InvoicerOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Scenario, "scenario", "", "run another scenario: invoicer (Kafka -> inbox -> INVOIC -> outbox -> AS4 partner, 3 processes SIGKILLed)")
	clikit.IntFlag(fs, &o.Invoices, "invoices", 200, 1, "--scenario invoicer: unique InvoiceIssued events")
	clikit.DurationFlag(fs, &o.Timeout, "timeout", 2*time.Minute, false, "--scenario invoicer: fail if the invoices are not all delivered by then")
	fs.StringVar(&o.PartnerSchema, "partner-schema", "partner", "--scenario invoicer on PostgreSQL: the schema of the partner's tables")
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
func (o *Options) define(fs *flag.FlagSet, env *clikit.Env) {
	o.DB.Register(fs, env)
	fs.StringVar(&o.Source, "source", "memory", "the broker: "+demoSourceNames())
	clikit.IntFlag(fs, &o.Messages, "messages", 1000, 1, "unique InvoiceIssued events to publish")
	clikit.FractionFlag(fs, &o.Duplicates, "duplicates", 0.2, "share of events the producer publishes a second time (0 to 1)")
	clikit.IntFlag(fs, &o.Crashes, "crashes", 6, 0, "consumer SIGKILLs during the run")
	fs.Uint64Var(&o.Seed, "seed", 0, "random seed (default: from the clock)")
	fs.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary SQLite directory")
	fs.StringVar(&o.amqpURL, "amqp-url", defaultAMQPURL, "RabbitMQ broker of --source rabbitmq")
	o.External.register(fs)
	fs.StringVar(&o.Sabotage, "sabotage", "", "break the consumer on purpose, to see the checker fail: "+
		SabotageDeliveryKey+" (key on the delivery, not the message) or "+SabotageAckFirst+" (ack before the commit); "+
		"with --scenario invoicer: fresh-message-id, lost-receipts (the control) or partner-without-inbox")
	o.Invoicer.register(fs)
}

// runDemo runs the demo that o describes (invoicer: --scenario invoicer).
func runDemo(ctx context.Context, env *clikit.Env, fs *flag.FlagSet, o Options,
	invoicer func(context.Context, *clikit.Env, *flag.FlagSet, Options) int) int {
	if o.Invoicer.Scenario != "" {
		return invoicer(ctx, env, fs, o)
	}
	if err := o.validate(fs); err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return clikit.ExitUsage
	}
	if o.DB.URL == "" {
		dir, err := os.MkdirTemp("", "txinbox-demo-")
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox demo:", err)
			return clikit.ExitFailure
		}
		if !o.Keep {
			defer os.RemoveAll(dir)
		}
		o.DB.URL = filepath.Join(dir, "inbox.db")
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	sum, err := demoSources[o.Source].run(ctx, env, o)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return clikit.ExitFailure
	}
	if o.JSON {
		json.NewEncoder(env.Stdout).Encode(sum) //nolint:errcheck // stdout
	} else {
		printDemoSummary(env, sum)
	}
	if !sum.OK {
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

// demoSource is a broker the demo runs through: run publishes the plan,
// runs consumer child processes (the hidden command child), SIGKILLs
// them and verifies the effects.
type demoSource struct {
	run   func(ctx context.Context, env *clikit.Env, o Options) (*demoSummary, error)
	child clikit.RawCommand
}

// demoSources are the brokers of --source: adding one is a file with its
// run and child functions and a line here.
var demoSources = map[string]demoSource{
	"memory":   {runDemoScenario, clikit.RawCommand{Name: "demo-consumer", Func: RunConsumer}},
	"kafka":    {runDemoKafka, clikit.RawCommand{Name: "demo-consumer-kafka", Func: RunConsumerKafka}},
	"rabbitmq": {runDemoRabbitMQ, clikit.RawCommand{Name: "demo-consumer-amqp", Func: RunConsumerAMQP}},
	"nats":     {runDemoNATS, clikit.RawCommand{Name: "demo-consumer-nats", Func: RunConsumerNATS}},
	"sqs":      {runDemoSQS, clikit.RawCommand{Name: "demo-consumer-sqs", Func: RunConsumerSQS}},
}

// ChildCommands are the hidden commands of the demo's consumer child
// processes, one per broker, by name.
func ChildCommands() []clikit.Command {
	var out []clikit.Command
	for _, s := range demoSources {
		out = append(out, s.child)
	}
	slices.SortFunc(out, func(a, b clikit.Command) int { return strings.Compare(a.Info().Name, b.Info().Name) })
	return out
}

func demoSourceNames() string {
	names := make([]string, 0, len(demoSources))
	for n := range demoSources {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (o *Options) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case demoSources[o.Source].run == nil:
		return fmt.Errorf("--source %q: use one of %s", o.Source, demoSourceNames())
	case o.Messages < 1:
		return fmt.Errorf("--messages must be at least 1, got %d", o.Messages)
	case o.Duplicates < 0 || o.Duplicates > 1:
		return fmt.Errorf("--duplicates must be between 0 and 1, got %g", o.Duplicates)
	case o.Sabotage != "" && o.Sabotage != SabotageDeliveryKey && o.Sabotage != SabotageAckFirst:
		return fmt.Errorf("--sabotage %q: use %s or %s", o.Sabotage, SabotageDeliveryKey, SabotageAckFirst)
	case o.Crashes < 0:
		return fmt.Errorf("--crashes must not be negative, got %d", o.Crashes)
	}
	return nil
}

func printDemoSummary(env *clikit.Env, s *demoSummary) {
	w := env.Stdout
	fmt.Fprintf(w, "txinbox demo on %s (%s), run %s\n", s.DB, s.Where, s.Run)
	fmt.Fprintf(w, "  published           %6d  (%d unique invoices, %d re-sent by the producer)\n", s.Published, s.Unique, s.Resent)
	fmt.Fprintf(w, "  consumer crashes    %6d  SIGKILL %s\n", s.Crashes, FormatCrashPoints(s.CrashPoints))
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
func demoPlan(o Options, run string, rng *rand.Rand) (ids []string, payloads []string, stream []int) {
	for i := range o.Messages {
		inv := demoInvoice{Type: "InvoiceIssued", InvoiceNo: fmt.Sprintf("INV-%s-%06d", run, i+1),
			Partner: fmt.Sprintf("PARTNER-%d", rng.IntN(5)+1), AmountCents: int64(rng.IntN(1_000_000) + 100), Run: run}
		b, _ := json.Marshal(inv) // plain struct
		ids = append(ids, fmt.Sprintf("InvoiceIssued/%s/%06d", run, i+1))
		payloads = append(payloads, string(b))
		stream = append(stream, i)
	}
	resend := int(float64(o.Messages)*o.Duplicates + 0.5)
	for range resend {
		// A re-send goes somewhere after the original.
		orig := rng.IntN(o.Messages)
		pos := orig + 1 + rng.IntN(len(stream)-orig)
		stream = append(stream[:pos], append([]int{orig}, stream[pos:]...)...)
	}
	return ids, payloads, stream
}

// FormatCrashPoints writes the crashes per point, sorted by point:
// "2 after-commit, 1 before-commit".
func FormatCrashPoints(points map[string]int) string {
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
