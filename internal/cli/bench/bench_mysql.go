package bench

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/bench/benchsys"
	"github.com/txinbox/txinbox/internal/cli/bench/mybench"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// myBench is the benchmark on MySQL or MariaDB (--db mysql://): its own
// database for the run, the same rows as PostgreSQL's scenarios.
type myBench struct {
	be        *benchEnv // its options, batches and measurement (no pool)
	db, admin *sql.DB
	name      string
	driver    *mysqlstore.Driver
	mariadb   bool // the ceiling's claim returns its rows (RETURNING)
}

// myReport is the MySQL run's report: each scenario per duplicate share,
// and txinbox's ratio to MariaDB's ceiling at each share.
type myReport struct {
	Server              string             `json:"server"`
	DurationPerScenario string             `json:"duration_per_scenario"`
	Results             []*benchResult     `json:"results"`
	VsCeiling           map[string]float64 `json:"txinbox_vs_ceiling"`
	RRVsCeiling         map[string]float64 `json:"txinbox_repeatable_read_vs_ceiling"`
	DeclVsCeiling       map[string]float64 `json:"txinbox_declarative_vs_ceiling"`
	Purge               []purgePoint       `json:"purge,omitempty"`
}

// myScenarios are the MySQL scenarios, in their --only names.
var myScenarios = []string{"ceiling", "seed", "seed16", "txinbox", "txinbox-rr", "declarative"}

func runMySQLBench(ctx context.Context, env *clikit.Env, o benchOptions) (*myReport, error) {
	mb, err := newMyBench(ctx, env, o)
	if err != nil {
		return nil, err
	}
	defer mb.close()
	rep := &myReport{DurationPerScenario: o.duration.String(), VsCeiling: map[string]float64{}, RRVsCeiling: map[string]float64{}, DeclVsCeiling: map[string]float64{}}
	_ = mb.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&rep.Server)
	mb.mariadb = strings.Contains(rep.Server, "MariaDB")
	for _, dup := range o.dups {
		merged := make([]*benchResult, len(myScenarios))
		for range o.rounds {
			for i, key := range myScenarios {
				if !o.scenarios[key] || (merged[i] != nil && merged[i].Error != "") {
					continue
				}
				if err := mb.truncate(ctx); err != nil {
					return nil, err
				}
				r, err := mb.run(ctx, key, dup)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					r = &benchResult{Name: key, Store: "mysql", Duplicates: dup, Error: err.Error()}
				}
				r.Checkpoints = -1
				merged[i] = merged[i].merge(r)
			}
		}
		share := fmt.Sprintf("%.0f%%", 100*dup)
		for i, r := range merged {
			if r == nil {
				continue
			}
			rep.Results = append(rep.Results, r)
			if c := merged[0]; c != nil && c.Error == "" && c.MsgsPerSec > 0 && r.Error == "" {
				switch myScenarios[i] {
				case "txinbox":
					rep.VsCeiling[share] = r.MsgsPerSec / c.MsgsPerSec
				case "txinbox-rr":
					rep.RRVsCeiling[share] = r.MsgsPerSec / c.MsgsPerSec
				case "declarative":
					rep.DeclVsCeiling[share] = r.MsgsPerSec / c.MsgsPerSec
				}
			}
		}
	}
	if o.scenarios["purge"] {
		var err error
		if rep.Purge, err = mb.purgeBench(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// run runs the scenario key once.
func (mb *myBench) run(ctx context.Context, key string, dup float64) (*benchResult, error) {
	switch key {
	case "ceiling":
		return mb.ceiling(ctx, dup)
	case "seed", "seed16":
		return mb.seed(ctx, dup, map[string]int{"seed": 1, "seed16": 16}[key])
	case "txinbox":
		return mb.txinbox(ctx, dup, sql.LevelReadCommitted, "txinbox")
	case "txinbox-rr":
		return mb.txinbox(ctx, dup, sql.LevelRepeatableRead, "txinbox-repeatable-read")
	case "declarative": // the effect's statement after the claim's, over the rows it inserted
		return declarativeOn(ctx, mb.be, mb.driver, "mysql", dup)
	}
	return nil, fmt.Errorf("no scenario %q on MySQL", key)
}

func newMyBench(ctx context.Context, env *clikit.Env, o benchOptions) (*myBench, error) {
	cfg, err := mysqlstore.ParseDSN(strings.Replace(o.db, "mariadb://", "mysql://", 1))
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	admin, err := mybench.OpenDB(cfg, 2)
	if err == nil {
		err = admin.PingContext(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", mysqlstore.Redact(cfg), err)
	}
	b := make([]byte, 4)
	crand.Read(b)
	mb := &myBench{be: &benchEnv{o: o, env: env}, admin: admin, name: "txinbox_bench_" + hex.EncodeToString(b)}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+mb.name+" CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		return nil, err
	}
	c := cfg.Clone()
	c.DBName = mb.name
	if mb.db, err = mybench.OpenDB(c, max(o.conns, 16)+4); err == nil {
		mb.driver, err = mysqlstore.New(mb.db, mysqlstore.Options{})
	}
	if err == nil {
		mb.be.check = mb.oneEffectPerInboxRow
		err = mb.driver.Migrate(ctx)
	}
	if err == nil {
		_, err = mb.db.ExecContext(ctx, "CREATE TABLE effects (scope VARBINARY(64) NOT NULL, message_id VARBINARY(255) NOT NULL) ENGINE=InnoDB")
	}
	if err != nil {
		mb.close()
		return nil, err
	}
	return mb, nil
}

func (mb *myBench) close() {
	if mb.db != nil {
		mb.db.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mb.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+mb.name) //nolint:errcheck // best effort
	mb.admin.Close()
}

func (mb *myBench) truncate(ctx context.Context) error {
	t := mb.driver.Tables()
	return mybench.Truncate(ctx, mb.db, t.Inbox, t.Attempts, t.Drift, "effects")
}

// oneEffectPerInboxRow is the check of every scenario: exactly once is
// one effect per inbox row.
func (mb *myBench) oneEffectPerInboxRow(r *benchResult) error {
	var inbox int64
	err := mb.db.QueryRow(mb.driver.Tables().Expand("SELECT (SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')")).
		Scan(&r.Effects, &inbox)
	if err == nil && r.Effects != inbox {
		err = fmt.Errorf("%s: %d effects for %d inbox rows", r.Name, r.Effects, inbox)
	}
	return err
}

func (mb *myBench) measure(ctx context.Context, name string, dup float64, workers int,
	work func(ctx context.Context, w int, lat *latencies, msgs *atomic.Int64) error) (*benchResult, error) {
	return mb.be.measureWith(ctx, name, "mysql", dup, workers, mb.oneEffectPerInboxRow, work)
}

// ceiling is MariaDB's (MySQL's) own limit for the same rows, the shape
// of PostgreSQL's ceiling as far as MySQL allows: per batch, in key order,
// a multi-row INSERT ... ON DUPLICATE KEY UPDATE (a no-op) claims the
// inbox rows, a multi-row INSERT writes the new ones' effect rows, COMMIT,
// in a plain transaction (no XA, no guard): mybench.CeilingBatch.
func (mb *myBench) ceiling(ctx context.Context, dup float64) (*benchResult, error) {
	t := mb.driver.Tables()
	ids := benchsys.NewIDSource(dup, mb.be.o.batch*mb.be.o.conns*4)
	hash := benchHash()
	return mb.measure(ctx, "ceiling", dup, mb.be.o.conns, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		for ctx.Err() == nil {
			batch := mb.be.batchIDs(ids, rng)
			slices.Sort(batch)
			t0 := time.Now()
			if err := mybench.CeilingBatch(context.WithoutCancel(ctx), mb.db, t.Inbox, batch, hash, rng.Int64N(1<<62)+1, mb.mariadb); err != nil {
				return err
			}
			lat.add(time.Since(t0), len(batch))
			n.Add(int64(len(batch)))
		}
		return nil
	})
}

// seed is the seed's algorithm: one transaction per message, a duplicate
// detected by the unique violation (1062).
func (mb *myBench) seed(ctx context.Context, dup float64, workers int) (*benchResult, error) {
	ins := mb.driver.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
VALUES ('bench', ?, 'bench', '', '', ?, ?, ?)`)
	ids := benchsys.NewIDSource(dup, workers*4)
	hash := benchHash()
	return mb.measure(ctx, "seed", dup, workers, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 2))
		for ctx.Err() == nil {
			id, _ := ids.ID(rng)
			t0 := time.Now()
			if err := mybench.SeedOne(context.WithoutCancel(ctx), mb.db, ins, id, hash); err != nil {
				return err
			}
			lat.add(time.Since(t0), 1)
			n.Add(1)
		}
		return nil
	})
}

// txinbox is mysqlstore with a batch handler writing the batch's effect
// rows in one multi-row INSERT, at the isolation level given.
func (mb *myBench) txinbox(ctx context.Context, dup float64, level sql.IsolationLevel, name string) (*benchResult, error) {
	p, err := mb.processor(level)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	r, err := mb.be.feedProcessorWith(ctx, "mysql", dup, mb.be.o.conns, p.Process, mb.oneEffectPerInboxRow)
	if r != nil {
		r.Name = name
	}
	return r, err
}

// processor is mysqlstore at the isolation level given with a batch
// handler writing the batch's effect rows in one multi-row INSERT.
func (mb *myBench) processor(level sql.IsolationLevel) (*txinbox.Processor[*sql.Tx], error) {
	d, err := mysqlstore.New(mb.db, mysqlstore.Options{Isolation: level})
	if err != nil {
		return nil, err
	}
	return txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{
		Scope:        "bench",
		MaxBatchSize: mb.be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*txinbox.Message) error {
			args := make([]any, len(msgs))
			for i, m := range msgs {
				args[i] = m.ID
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES "+mybench.Values(len(msgs)), args...)
			return err
		},
	})
}

func printMySQLBench(env *clikit.Env, rep *myReport, asJSON bool) {
	if asJSON {
		json.NewEncoder(env.Stdout).Encode(rep) //nolint:errcheck // stdout
		return
	}
	fmt.Fprintf(env.Stdout, "txinbox bench on %s, %s per scenario\n", rep.Server, rep.DurationPerScenario)
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tstore\tdup\tworkers\tmessages\tmsgs/s\tp50 ms\tp99 ms\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s\t%s\t%.0f%%\t\t\t\t\t\t%s\n", r.Name, r.Store, 100*r.Duplicates, r.Error)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f%%\t%d\t%d\t%.0f\t%.2f\t%.2f\t\n", r.Name, r.Store, 100*r.Duplicates, r.Workers, r.Messages,
			r.MsgsPerSec, r.P50ms, r.P99ms)
	}
	w.Flush()
	for _, k := range []string{"0%", "30%"} {
		for _, r := range []struct {
			what   string
			ratios map[string]float64
		}{{"txinbox", rep.VsCeiling}, {"txinbox at REPEATABLE READ", rep.RRVsCeiling}, {"txinbox declarative", rep.DeclVsCeiling}} {
			if v, ok := r.ratios[k]; ok {
				fmt.Fprintf(env.Stdout, "%s vs ceiling at %s duplicates: %.2f\n", r.what, k, v)
			}
		}
	}
	if len(rep.Purge) > 0 {
		printPurgeBench(env.Stdout, rep.Purge)
	}
}
