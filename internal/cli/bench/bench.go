package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/bench/benchsys"
	"github.com/txinbox/txinbox/internal/cli/bench/scaleout"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// Command is txinbox bench.
type Command struct {
	o                               benchOptions
	dups, only                      string
	cpuprofile, prefill, batchSizes *string
	scaleOut, kafkaBrokers          *string
	log                             clikit.LogFlags
}

// Info describes txinbox bench for help and completion.
func (c *Command) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "bench", Summary: "measure txinbox against PostgreSQL's own insert ceiling and the seed's algorithm",
		Description: `Measures, on the PostgreSQL database at --db (in a schema of its own, dropped
after), PostgreSQL's own insert ceiling, the seed's algorithm and txinbox,
taking turns in --rounds slices so that load changes weigh on all alike, and
prints a table (or --json). See docs/benchmarks.md.`,
		Examples: []clikit.Example{{Command: "txinbox bench --db postgres://localhost/bench"},
			{Command: "txinbox bench --db postgres://localhost/bench --only txinbox,ceiling --batch-sizes 1,10,100 --chart bench.svg"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "measured"}, {Code: clikit.ExitFailure, What: "a scenario or the database failed"}, {Code: clikit.ExitUsage, What: "bad flags"}}}
}

// Define defines the flags of txinbox bench.
func (c *Command) Define(fs *clikit.FlagSet, env *clikit.Env) {
	c.defineFlags(fs.FlagSet, env)
	fs.GroupPrefix("Databases", "db", "sqlite")
	fs.GroupPrefix("Scale-out", "scale-out", "serve-bin")
	fs.GroupPrefix("Extra measures", "prefill", "batch-sizes", "purge-rows", "chart", "cpuprofile")
	c.log.Define(fs)
}

// Run runs txinbox bench with the flags parsed.
func (c *Command) Run(ctx context.Context, in *clikit.Invocation) int {
	logger, err := c.log.NewLogger(in.Env.Stderr)
	if err != nil {
		return clikit.UsageError(in.Env, in.Path, err.Error())
	}
	logger.Info("txinbox bench: starting", "duration", duration.Format(c.o.duration), "rounds", c.o.rounds,
		"batch", c.o.batch, "conns", c.o.conns, "only", c.only)
	return c.runBench(ctx, in.Env)
}

type benchOptions struct {
	db         string
	sqlite     string
	duration   time.Duration
	batch      int
	conns      int
	rounds     int
	dups       []float64
	json       bool
	scenarios  map[string]bool
	prefill    []int64
	batchSizes []int64
	chart      string
	purgeRows  int64
	// scaleOut is the serve process counts of the scale-out scenario,
	// scaleRecords its backlog, serveBin the txinbox binary it runs.
	scaleOut     []int64
	scaleRecords int64
	// kafkaRecords is what each e2e-kafka and kafka-watermark slice
	// pre-produces.
	kafkaRecords int64
	scaleKills   int
	serveBin     string
	// busy is how many CPU-bound processes run beside light-busy.
	busy int
	// kafkaBrokers is a real Kafka the Kafka scenarios also run on.
	kafkaBrokers []string
	// scenarioTimeout bounds each scenario (each slice of a sliced one).
	scenarioTimeout time.Duration
}

// benchResult is one measured scenario.
type benchResult struct {
	Name       string  `json:"name"`
	Store      string  `json:"store"`
	Duplicates float64 `json:"duplicates"`
	Workers    int     `json:"workers"`
	Messages   int64   `json:"messages"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Effects    int64   `json:"effects"`
	// Checkpoints is how many checkpoints PostgreSQL completed during the
	// scenario's slices (-1 if it could not be read): a checkpoint's
	// flushes weigh on the slices it falls in, the latency tail above all.
	Checkpoints int64 `json:"postgres_checkpoints"`
	// Runnable is, for light-busy, the mean number of runnable tasks on
	// the machine during its slices (the mean of the runnableSlices
	// slices' means): how busy the machine was.
	Runnable       float64 `json:"runnable_tasks,omitempty"`
	runnableSlices int
	Error          string `json:"error,omitempty"`
	// Broker is, for the Kafka scenarios run on --kafka-brokers, that
	// broker ("apache-kafka"); empty on the run's own kfake cluster.
	Broker string `json:"broker,omitempty"`
	lat    *latencies
}

// defineFlags defines bench's flags, bound to c.
func (c *Command) defineFlags(fs *flag.FlagSet, _ *clikit.Env) {
	o, dups, only := &c.o, &c.dups, &c.only
	fs.StringVar(&o.db, "db", "", "PostgreSQL URL to measure on (a schema of its own is created and dropped)")
	fs.StringVar(&o.sqlite, "sqlite", "", "also measure txinbox on this SQLite file (created, then removed)")
	clikit.DurationFlag(fs, &o.duration, "duration", 5*time.Second, false, "how long each scenario runs in all")
	clikit.IntFlag(fs, &o.rounds, "rounds", 5, 1, "the scenarios take turns in this many slices of --duration each, so load changes weigh on all alike")
	clikit.IntFlag(fs, &o.batch, "batch", 100, 1, "messages per transaction")
	clikit.IntFlag(fs, &o.conns, "conns", 4, 1, "connections for the ceiling and txinbox scenarios")
	fs.StringVar(dups, "duplicates", "0,0.3", "comma-separated duplicate shares to measure")
	fs.StringVar(only, "only", "", "comma-separated scenarios to run (ceiling, ceiling-full-row, ceiling-one-row, seed, seed16, txinbox, declarative, light, light-busy, "+
		"sqlite, e2e-kafka, kafka-watermark, scale-out, purge); default all but purge")
	c.scaleOut = fs.String("scale-out", "1,2,3", "scale-out: serve process counts in one Kafka group")
	clikit.Int64Flag(fs, &o.scaleRecords, "scale-out-records", 60_000, 1000, "scale-out: the backlog each drain starts from")
	clikit.Int64Flag(fs, &o.kafkaRecords, "kafka-records", defaultKafkaRecords, 1000,
		"e2e-kafka, kafka-watermark: the records each slice pre-produces (it ends when they are handled or its time is up)")
	clikit.IntFlag(fs, &o.scaleKills, "scale-out-kills", 3, 0, "scale-out: SIGKILLs (each process replaced) during one more drain with the most processes; 0: no such drain")
	clikit.IntFlag(fs, &o.busy, "busy", 4, 1, "light-busy: CPU-bound processes (each in a session of its own, as other programs) running beside the light load")
	fs.StringVar(&o.serveBin, "serve-bin", scaleout.ServeBinary(), "scale-out: the txinbox binary whose serve processes are measured")
	clikit.Int64Flag(fs, &o.purgeRows, "purge-rows", 5_000_000, 1, "purge: expired rows to prefill and purge, in each mode")
	fs.BoolVar(&o.json, "json", false, "print one JSON object")
	c.kafkaBrokers = fs.String("kafka-brokers", "", "e2e-kafka, kafka-watermark: also run them on this real Kafka (comma-separated host:port seeds), beside the run's kfake, in one report")
	clikit.DurationFlag(fs, &o.scenarioTimeout, "scenario-timeout", 15*time.Minute, false,
		"a scenario (a slice of a sliced one) running longer is stopped and reported failed with where it stood; the run goes on")
	c.cpuprofile = fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof)")
	c.prefill = fs.String("prefill", "", "growth: also measure txinbox with the inbox pre-filled to these row counts, e.g. 1000000,10000000")
	c.batchSizes = fs.String("batch-sizes", "", "also measure txinbox and the ceiling at these batch sizes, e.g. 1,10,100,500")
	fs.StringVar(&o.chart, "chart", "", "write an SVG chart of throughput against batch size and inbox size to `FILE`")
}

// runBench runs the scenarios that the flags choose.
func (c *Command) runBench(ctx context.Context, env *clikit.Env) int {
	o, dups, only, cpuprofile, prefill, batchSizes, scaleOut := c.o, c.dups, c.only, c.cpuprofile, c.prefill, c.batchSizes, c.scaleOut
	var err error
	if o.prefill, err = parseCounts("--prefill", *prefill); err == nil {
		o.batchSizes, err = parseCounts("--batch-sizes", *batchSizes)
	}
	if err == nil {
		o.scaleOut, err = parseCounts("--scale-out", *scaleOut)
	}
	if err == nil && *c.kafkaBrokers != "" {
		o.kafkaBrokers = strings.Split(*c.kafkaBrokers, ",")
	}
	if err == nil && o.scenarioTimeout <= 0 {
		err = errors.New("--scenario-timeout must be positive")
	}
	if err == nil && len(o.scaleOut) == 0 {
		err = errors.New("--scale-out: give process counts, e.g. 1,2,3")
	}
	if err == nil && slices.Max(o.scaleOut) > scaleout.Partitions {
		// A member beyond the topic's partitions gets none: it would sit
		// idle in the group and only hold memory and connections.
		err = fmt.Errorf("--scale-out: at most %d processes (the topic's partitions), not %d", scaleout.Partitions, slices.Max(o.scaleOut))
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox bench:", err)
		return clikit.ExitUsage
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox bench:", err)
			return clikit.ExitUsage
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(env.Stderr, "txinbox bench:", err)
			return clikit.ExitFailure
		}
		defer pprof.StopCPUProfile()
	}
	if err := o.parse(dups, only); err != nil {
		fmt.Fprintln(env.Stderr, "txinbox bench:", err)
		return clikit.ExitUsage
	}
	// No soft memory limit: one of 64 MB (set here until 2026-12-02, to
	// keep the peak RSS low) made the garbage collector run without pause
	// once a Kafka slice's buffered records approached it, and cut the
	// Kafka scenarios' rates by half to three quarters. The process runs
	// with the runtime's defaults, as a user's would.
	if clikit.IsMySQLURL(o.db) {
		rep, err := runMySQLBench(ctx, env, o)
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox bench:", err)
			return clikit.ExitFailure
		}
		printMySQLBench(env, rep, o.json)
		return clikit.ExitOK
	}
	load0 := benchsys.LoadAverage()
	rep, err := runBenchScenarios(ctx, env, o)
	if rep != nil {
		rep.LoadAverage = [2]float64{load0, benchsys.LoadAverage()}
	}
	if err == nil && o.scenarios["purge"] {
		if rep.Purge, err = runPurgeBench(ctx, env, o); err != nil && ctx.Err() == nil {
			rep.fail("purge", err)
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox bench:", err)
		return clikit.ExitFailure
	}
	if o.chart != "" {
		if err := os.WriteFile(o.chart, benchChart(rep), 0o644); err != nil {
			fmt.Fprintln(env.Stderr, "txinbox bench: --chart:", err)
			return clikit.ExitFailure
		}
	}
	if o.json {
		json.NewEncoder(env.Stdout).Encode(rep) //nolint:errcheck // stdout
	} else {
		printBench(env, rep)
	}
	if rep.failed() {
		for _, f := range rep.Failed {
			fmt.Fprintf(env.Stderr, "txinbox bench: %s failed: %s\n", f.Scenario, f.Error)
		}
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

// maxBusy bounds --busy: far more CPU-bound processes than cores.
const maxBusy = 256

func (o *benchOptions) parse(dups, only string) error {
	if err := clikit.CheckScheme(o.db); err != nil {
		return err
	}
	if !clikit.IsPostgresURL(o.db) && !clikit.IsMySQLURL(o.db) {
		return fmt.Errorf("--db must be a postgres:// or mysql:// URL (the ceiling is that database's), got %q", o.db)
	}
	if o.duration <= 0 || o.batch < 1 || o.batch > 5000 || o.conns < 1 || o.rounds < 1 || o.purgeRows < 1 {
		return fmt.Errorf("--duration must be positive, --batch between 1 and 5000, --conns, --rounds and --purge-rows at least 1")
	}
	if o.busy > maxBusy {
		// Each is a process: thousands would only measure the machine's
		// process table.
		return fmt.Errorf("--busy must be at most %d, not %d", maxBusy, o.busy)
	}
	for _, d := range strings.Split(dups, ",") {
		var f float64
		if _, err := fmt.Sscan(strings.TrimSpace(d), &f); err != nil || f < 0 || f >= 1 {
			return fmt.Errorf("--duplicates: %q is not a share between 0 and 1", d)
		}
		o.dups = append(o.dups, f)
	}
	all := []string{"ceiling", "ceiling-full-row", "ceiling-one-row", "seed", "seed16", "txinbox", "declarative", "database-sql", "database-sql-declarative",
		"light", "light-busy", "sqlite", "e2e-kafka",
		"kafka-watermark", "scale-out", "purge", "txinbox-rr"}
	o.scenarios = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(all, s) {
			return fmt.Errorf("--only: unknown scenario %q (use %s)", s, strings.Join(all, ", "))
		}
		o.scenarios[s] = true
	}
	if len(o.scenarios) == 0 {
		for _, s := range all {
			o.scenarios[s] = s != "purge" // minutes of prefill: only when asked
		}
	}
	return nil
}

func printBench(env *clikit.Env, rep *benchReport) {
	if len(rep.Results) == 0 && len(rep.Purge) > 0 {
		printPurgeBench(env.Stdout, rep.Purge)
		return
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tstore\tdup\tworkers\tmessages\tmsgs/s\tp50 ms\tp99 ms\tcheckpoints\t")
	for _, r := range rep.Results {
		name := r.Name
		if r.Broker != "" {
			name += " (" + r.Broker + ")"
		}
		if r.Error != "" {
			fmt.Fprintf(w, "%s\t%s\t%.0f%%\t%d\t-\t-\t-\t-\t-\t(failed, see below)\n", name, r.Store, 100*r.Duplicates, r.Workers)
			continue
		}
		ckpts := "-" // not read
		if r.Checkpoints >= 0 {
			ckpts = fmt.Sprint(r.Checkpoints)
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f%%\t%d\t%d\t%.0f\t%.2f\t%.2f\t%s\t\n", name, r.Store, 100*r.Duplicates, r.Workers,
			r.Messages, r.MsgsPerSec, r.P50ms, r.P99ms, ckpts)
	}
	w.Flush()
	printHeadline(env, "", &rep.headline)
	if rep.Dup30 != nil {
		printHeadline(env, " (30% duplicates)", rep.Dup30)
	}
	printFootline(env.Stdout, rep)
	if len(rep.ScaleOut) > 0 {
		w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "\nserve processes\tSIGKILLs\tmsgs/s\tvs ceiling\tdoubled\tlost\t")
		for _, p := range rep.ScaleOut {
			fmt.Fprintf(w, "%d\t%d\t%.0f\t%s\t%d\t%d\t\n", p.Processes, p.Kills, p.MsgsPerSec, percent(p.VsCeiling), p.Doubled, p.Lost)
		}
		w.Flush()
	}
	if len(rep.BatchSizes) > 0 {
		w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "\nbatch\ttxinbox msgs/s\tceiling msgs/s\ttxinbox/ceiling\ttxinbox p99 ms\t")
		for _, b := range rep.BatchSizes {
			fmt.Fprintf(w, "%d\t%.0f\t%.0f\t%.0f%%\t%.2f\t\n", b.Batch, b.Txinbox, b.Ceiling, 100*b.VsCeiling, b.TxinboxP99)
		}
		w.Flush()
	}
	if len(rep.Purge) > 0 {
		printPurgeBench(env.Stdout, rep.Purge)
	}
	if len(rep.Growth) > 0 {
		w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "\ninbox rows\ttxinbox msgs/s\tvs empty\tp99 ms\t")
		for _, g := range rep.Growth {
			fmt.Fprintf(w, "%d\t%.0f\t%.0f%%\t%.2f\t\n", g.InboxRows, g.MsgsPerSec, 100*g.VsEmptyInbox, g.P99ms)
		}
		w.Flush()
	}
	for i, f := range rep.Failed {
		if i == 0 {
			fmt.Fprintln(env.Stdout, "\nfailed:")
		}
		fmt.Fprintf(env.Stdout, "  %s: %s\n", f.Scenario, f.Error)
	}
}

// printHeadline prints the ratios to the ceilings whose both scenarios
// ran, and nothing when none did.
func printHeadline(env *clikit.Env, what string, h *headline) {
	var parts []string
	for _, r := range []struct {
		name string
		v    *float64
	}{{"txinbox", h.TxinboxVsCeiling}, {"declarative", h.DeclarativeVsCeiling}, {"database/sql", h.DatabaseSQLVsCeiling},
		{"database/sql declarative", h.DatabaseSQLDeclarativeVsCeiling}, {"e2e kafka", h.E2EKafkaVsCeiling}} {
		if r.v != nil {
			parts = append(parts, r.name+" "+percent(r.v))
		}
	}
	line := ""
	if len(parts) > 0 {
		line = "/ ceiling" + what + ": " + strings.Join(parts, "   ")
	}
	if h.KafkaWatermarkVsOneRow != nil {
		wm := "kafka watermark / one-row ceiling " + percent(h.KafkaWatermarkVsOneRow)
		if line == "" {
			line = "kafka watermark / one-row ceiling" + what + ": " + percent(h.KafkaWatermarkVsOneRow)
		} else {
			line += ";   " + wm
		}
	}
	if line != "" {
		fmt.Fprintf(env.Stdout, "\n%s\n", line)
	}
	if h.DatabaseSQLVsTxinbox != nil || h.DatabaseSQLDeclarativeVsDecl != nil {
		fmt.Fprintf(env.Stdout, "database/sql / pgstore%s: batch handler %s   declarative %s\n", what,
			percent(h.DatabaseSQLVsTxinbox), percent(h.DatabaseSQLDeclarativeVsDecl))
	}
}

// printFootline prints txinbox / seed and the light load's p99 when they
// ran, then the run's peak RSS and load average.
func printFootline(w io.Writer, rep *benchReport) {
	if rep.TxinboxVsSeed != nil {
		fmt.Fprintf(w, "txinbox / seed (1 worker): %.1fx   ", *rep.TxinboxVsSeed)
	}
	if rep.LightLoadP99ms > 0 {
		fmt.Fprintf(w, "p99 latency at 1,000 msgs/s offered: %.2f ms   ", rep.LightLoadP99ms)
	}
	if rep.LightLoadBusyP99ms > 0 {
		fmt.Fprintf(w, "the same beside CPU-bound processes: %.2f ms (%.1f runnable tasks)   ", rep.LightLoadBusyP99ms, rep.LightLoadBusyRunnable)
	}
	fmt.Fprintf(w, "peak RSS: %.0f MB   load average: %.1f, %.1f\n", rep.PeakRSSMB, rep.LoadAverage[0], rep.LoadAverage[1])
}

// percent writes a ratio as a percentage, "-" when it was not measured.
func percent(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100**r)
}
