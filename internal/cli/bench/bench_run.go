package bench

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/bench/benchsys"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/pgstore"
)

// benchEnv is the schema the benchmark owns for one run.
type benchEnv struct {
	o      benchOptions
	env    *clikit.Env
	schema string
	pool   *pgxpool.Pool
	driver *pgstore.Driver
	// sqlDB and sqlDriver are the database/sql store's (bench_dbsql.go).
	sqlDB     *sql.DB
	sqlDriver *pgdbstore.Driver
	check     func(*benchResult) error // feedProcessor's check, when not PostgreSQL's (MySQL's)
	kafka     benchKafkaCluster        // the Kafka scenarios' cluster, one per run
	// apache is the real Kafka of --kafka-brokers, where e2e-kafka and
	// kafka-watermark run too.
	apache benchKafkaCluster
}

func runBenchScenarios(ctx context.Context, env *clikit.Env, o benchOptions) (*benchReport, error) {
	be, err := newBenchEnv(ctx, env, o)
	if err != nil {
		return nil, err
	}
	defer be.close()
	rep := &benchReport{DurationPerScenario: duration.Format(o.duration)}
	scenarios := be.scenarios()
	// The scenarios take turns in short slices (Options.rounds of them), so
	// that a machine whose load changes during the run weighs on all of
	// them alike: the ratios are what the run is for.
	for _, dup := range o.dups {
		merged := make([]*benchResult, len(scenarios))
		for round := range o.rounds {
			for i, s := range scenarios {
				if !o.scenarios[s.key] || (s.key == "sqlite" && o.sqlite == "") || (merged[i] != nil && merged[i].Error != "") {
					continue
				}
				be.progress("%s (%.0f%% duplicates, %d workers), round %d/%d...", s.name, 100*dup, s.workers, round+1, o.rounds)
				if err := be.truncate(ctx); err != nil {
					return nil, err
				}
				c0 := postgresCheckpoints(ctx, be.pool)
				var r *benchResult
				err := be.bounded(ctx, s.label(), func(ctx context.Context) (err error) {
					r, err = s.run(ctx, dup)
					return err
				})
				if err != nil || r == nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					r = &benchResult{Name: s.name, Broker: s.broker, Duplicates: dup, Workers: s.workers, Error: err.Error()}
					rep.fail(s.label(), err)
				}
				if c1 := postgresCheckpoints(ctx, be.pool); c0 >= 0 && c1 >= 0 {
					r.Checkpoints = c1 - c0
				} else {
					r.Checkpoints = -1
				}
				merged[i] = merged[i].merge(r)
			}
		}
		for i, r := range merged {
			if r != nil {
				rep.Results = append(rep.Results, r)
				if scenarios[i].broker == "" { // the headline is kfake's
					rep.record(scenarios[i].key, r, dup == o.dups[0])
				}
			}
		}
	}
	be.runExtras(ctx, rep)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	be.progress("")
	rep.PeakRSSMB = benchsys.PeakRSSMB()
	return rep, nil
}

func newBenchEnv(ctx context.Context, env *clikit.Env, o benchOptions) (*benchEnv, error) {
	b := make([]byte, 4)
	crand.Read(b)
	schema := "txinbox_bench_" + hex.EncodeToString(b)
	cfg, err := pgxpool.ParseConfig(o.db)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = int32(max(o.conns, 16) + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", clikit.Redact(cfg), err)
	}
	be := &benchEnv{o: o, env: env, schema: schema, pool: pool, apache: benchKafkaCluster{seeds: o.kafkaBrokers, broker: apacheKafka}}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		pool.Close()
		return nil, err
	}
	be.driver, _ = pgstore.New(pool, pgstore.Options{Schema: schema})
	if err := be.openDatabaseSQL(cfg); err != nil {
		be.close()
		return nil, err
	}
	if err := be.driver.Migrate(ctx); err != nil {
		be.close()
		return nil, err
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
		be.close()
		return nil, err
	}
	return be, nil
}

func (be *benchEnv) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be.pool.Exec(ctx, "DROP SCHEMA "+be.schema+" CASCADE") //nolint:errcheck // best effort
	be.pool.Close()
	if be.sqlDB != nil {
		be.sqlDB.Close()
	}
	be.kafka.close()
}

func (be *benchEnv) truncate(ctx context.Context) error {
	_, err := be.pool.Exec(ctx, be.driver.Tables().Expand("TRUNCATE {inbox}, {attempts}, {drift}, effects"))
	return err
}

func (be *benchEnv) progress(format string, args ...any) {
	if !be.env.IsTerminal || be.o.json {
		return
	}
	fmt.Fprintf(be.env.Stderr, "\r\033[Kbench: "+format, args...)
}

// postgresCheckpoints is how many checkpoints the server has completed
// since its statistics were reset, timed or requested (PostgreSQL 17 moved
// the counts to pg_stat_checkpointer); -1 if neither view answers.
func postgresCheckpoints(ctx context.Context, pool *pgxpool.Pool) int64 {
	// Read through to_jsonb, so that a server without the columns answers
	// NULL instead of an error in its log at every slice.
	var n *int64
	err := pool.QueryRow(ctx, `SELECT (to_jsonb(b)->>'checkpoints_timed')::bigint + (to_jsonb(b)->>'checkpoints_req')::bigint
FROM pg_stat_bgwriter b`).Scan(&n)
	if err == nil && n == nil {
		err = pool.QueryRow(ctx, "SELECT num_timed + num_requested FROM pg_stat_checkpointer").Scan(&n)
	}
	if err != nil || n == nil {
		return -1
	}
	return *n
}

// merge adds the slice r to the scenario's result so far (nil at first).
func (acc *benchResult) merge(r *benchResult) *benchResult {
	if acc == nil || r.Error != "" {
		return r
	}
	acc.Messages += r.Messages
	acc.Seconds += r.Seconds
	acc.Effects += r.Effects
	if acc.Checkpoints >= 0 && r.Checkpoints >= 0 {
		acc.Checkpoints += r.Checkpoints
	} else {
		acc.Checkpoints = -1
	}
	acc.MsgsPerSec = float64(acc.Messages) / acc.Seconds
	if n := acc.runnableSlices + r.runnableSlices; n > 0 {
		acc.Runnable = (acc.Runnable*float64(acc.runnableSlices) + r.Runnable*float64(r.runnableSlices)) / float64(n)
		acc.runnableSlices = n
	}
	acc.lat.samples = append(acc.lat.samples, r.lat.samples...)
	acc.P50ms, acc.P99ms = acc.lat.percentile(0.50), acc.lat.percentile(0.99)
	return acc
}

// latencies collects per-message latency samples, weighted by count.
type latencies struct {
	mu      sync.Mutex
	samples []latencySample
}

type latencySample struct {
	d time.Duration
	n int
}

func (l *latencies) add(d time.Duration, n int) {
	l.mu.Lock()
	l.samples = append(l.samples, latencySample{d, n})
	l.mu.Unlock()
}

func (l *latencies) percentile(p float64) float64 {
	slices.SortFunc(l.samples, func(a, b latencySample) int { return int(a.d - b.d) })
	total := 0
	for _, s := range l.samples {
		total += s.n
	}
	want, seen := int(p*float64(total)), 0
	for _, s := range l.samples {
		if seen += s.n; seen > want {
			return float64(s.d) / float64(time.Millisecond)
		}
	}
	return 0
}

// measure runs work on workers goroutines for the configured duration and
// turns what they counted into a result.
func (be *benchEnv) measure(ctx context.Context, name, storeName string, dup float64, workers int,
	work func(ctx context.Context, w int, lat *latencies, msgs *atomic.Int64) error) (*benchResult, error) {
	check := be.oneEffectPerInboxRow // PostgreSQL, on either store: the bench's tables
	if storeName == "sqlite" {
		check = func(*benchResult) error { return nil }
	}
	return be.measureWith(ctx, name, storeName, dup, workers, check, work)
}

// oneEffectPerInboxRow is every inbox scenario's check: exactly once is
// one effect per inbox row.
func (be *benchEnv) oneEffectPerInboxRow(r *benchResult) error {
	var inbox int64
	err := be.pool.QueryRow(context.Background(), be.driver.Tables().Expand(
		"SELECT (SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')")).Scan(&r.Effects, &inbox)
	if err != nil {
		return err
	}
	if r.Effects != inbox {
		return fmt.Errorf("%s: %d effects for %d inbox rows", r.Name, r.Effects, inbox)
	}
	return nil
}

// measureWith is measure with the check of the scenario's end given.
func (be *benchEnv) measureWith(ctx context.Context, name, storeName string, dup float64, workers int, check func(*benchResult) error,
	work func(ctx context.Context, w int, lat *latencies, msgs *atomic.Int64) error) (*benchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, be.o.duration/time.Duration(be.o.rounds))
	defer cancel()
	var lat latencies
	var msgs atomic.Int64
	errs := make(chan error, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if err := work(ctx, w, &lat, &msgs); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	r := &benchResult{Name: name, Store: storeName, Duplicates: dup, Workers: workers, Messages: msgs.Load(),
		Seconds: elapsed, MsgsPerSec: float64(msgs.Load()) / elapsed, P50ms: lat.percentile(0.50), P99ms: lat.percentile(0.99), lat: &lat}
	return r, check(r)
}

var benchPayload = []byte(`{"type":"InvoiceIssued","invoice_no":"INV-000001","partner":"PARTNER-1","amount_cents":12345}`)

func benchHash() []byte {
	h := sha256.Sum256(benchPayload)
	return h[:]
}

// ceiling is PostgreSQL's own durable limit for the same rows: one
// statement per batch claims the inbox rows and inserts the effect rows of
// the new ones, committed on its own. It inserts in key order, as the
// claim does: two batches sharing keys then wait for each other instead of
// deadlocking.
func (be *benchEnv) ceiling(ctx context.Context, dup float64) (*benchResult, error) {
	q := be.driver.Tables().Expand(`WITH m AS (
	SELECT * FROM unnest($1::text[]) AS m(message_id)),
ins AS (
	INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
	SELECT 'bench', m.message_id, 'bench', '', '', $2, now(), now() FROM m ORDER BY m.message_id
	ON CONFLICT (scope, message_id) DO NOTHING RETURNING message_id)
INSERT INTO effects SELECT 'bench', message_id FROM ins`)
	hash := benchHash()
	return be.ceilingOf(ctx, "ceiling", dup, q, func(batch []string) []any { return []any{batch, hash} })
}

// ceilingFullRow is the ceiling's statement with the inbox row as txinbox
// writes it: every column a value of its own message (the ceiling's are
// constants but the id), the receive time given, the processing time the
// clock's, in (scope, id) order. What it costs more than the ceiling is
// the price of the row's contents, not of txinbox.
func (be *benchEnv) ceilingFullRow(ctx context.Context, dup float64) (*benchResult, error) {
	q := be.driver.Tables().Expand(`WITH m AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::timestamptz[])
	AS m(scope, message_id, source, source_position, partition_key, payload_hash, received_at)),
ins AS (
	INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
	SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
	FROM m ORDER BY m.scope, m.message_id
	ON CONFLICT (scope, message_id) DO NOTHING RETURNING scope, message_id)
INSERT INTO effects SELECT scope, message_id FROM ins`)
	return be.ceilingOf(ctx, "ceiling-full-row", dup, q, func(batch []string) []any {
		n := len(batch)
		scopes, sources, positions, pkeys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		hashes, received := make([][]byte, n), make([]time.Time, n)
		now := time.Now()
		for i := range batch {
			h := sha256.Sum256(benchPayload)
			scopes[i], sources[i], hashes[i], received[i] = "bench", "bench", h[:], now
		}
		return []any{scopes, batch, sources, positions, pkeys, hashes, received}
	})
}

// ceilingOf measures the statement q of a ceiling, run with args(batch)
// for each batch of distinct ids.
func (be *benchEnv) ceilingOf(ctx context.Context, name string, dup float64, q string, args func([]string) []any) (*benchResult, error) {
	ids := benchsys.NewIDSource(dup, be.o.batch*be.o.conns*4)
	return be.measure(ctx, name, "postgres", dup, be.o.conns, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		for ctx.Err() == nil {
			batch := be.batchIDs(ids, rng)
			t0 := time.Now()
			// Each statement runs to its end past the deadline, so that
			// what committed is counted.
			if _, err := be.pool.Exec(context.WithoutCancel(ctx), q, args(batch)...); err != nil {
				return err
			}
			lat.add(time.Since(t0), len(batch))
			n.Add(int64(len(batch)))
		}
		return nil
	})
}

// ceilingOneRow is PostgreSQL's limit for the effect rows alone: the
// ceiling's statement shape without the inbox. It is what an inbox that
// writes no row per message (offsets as the inbox) can approach; every
// message is an effect, repeats included (a producer's re-send is a new
// record to such an inbox).
func (be *benchEnv) ceilingOneRow(ctx context.Context, dup float64) (*benchResult, error) {
	q := `WITH m AS (SELECT * FROM unnest($1::text[]) AS m(message_id))
INSERT INTO effects SELECT 'bench', message_id FROM m`
	ids := benchsys.NewIDSource(dup, be.o.batch*be.o.conns*4)
	check := func(r *benchResult) error {
		if err := be.pool.QueryRow(context.Background(), "SELECT count(*) FROM effects").Scan(&r.Effects); err != nil {
			return err
		}
		if r.Effects != r.Messages {
			return fmt.Errorf("ceiling-one-row: %d effects for %d messages", r.Effects, r.Messages)
		}
		return nil
	}
	return be.measureWith(ctx, "ceiling-one-row", "postgres", dup, be.o.conns, check, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 5))
		for ctx.Err() == nil {
			batch := be.batchIDs(ids, rng)
			t0 := time.Now()
			if _, err := be.pool.Exec(context.WithoutCancel(ctx), q, batch); err != nil {
				return err
			}
			lat.add(time.Since(t0), len(batch))
			n.Add(int64(len(batch)))
		}
		return nil
	})
}

// batchIDs returns one batch of ids without repeats inside the batch.
func (be *benchEnv) batchIDs(ids *benchsys.IDSource, rng *rand.Rand) []string {
	batch := make([]string, 0, be.o.batch)
	seen := make(map[string]bool, be.o.batch)
	for len(batch) < be.o.batch {
		id, _ := ids.ID(rng)
		if !seen[id] {
			seen[id] = true
			batch = append(batch, id)
		}
	}
	return batch
}

// seed is the seed's algorithm as written: one transaction per message,
// duplicates detected by catching the unique violation.
func (be *benchEnv) seed(ctx context.Context, dup float64, workers int) (*benchResult, error) {
	ins := be.driver.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
VALUES ('bench', $1, 'bench', '', '', $2, now(), now())`)
	ids := benchsys.NewIDSource(dup, workers*4)
	hash := benchHash()
	return be.measure(ctx, "seed", "postgres", dup, workers, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 2))
		for ctx.Err() == nil {
			id, _ := ids.ID(rng)
			t0 := time.Now()
			if err := seedOne(context.WithoutCancel(ctx), be.pool, ins, id, hash); err != nil {
				return err
			}
			lat.add(time.Since(t0), 1)
			n.Add(1)
		}
		return nil
	})
}

func seedOne(ctx context.Context, pool *pgxpool.Pool, ins, id string, hash []byte) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, ins, id, hash); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return nil // a duplicate: roll back, ack
		}
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO effects VALUES ('bench', $1)", id); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// benchEffectsHandler is the bench's batch handler: one statement,
// queued to travel with the COMMIT (pgstore.Queue), as a handler that
// needs no result of its statement writes it.
func benchEffectsHandler(_ context.Context, tx pgx.Tx, ids []string) error {
	return pgstore.Queue(tx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", ids)
}
