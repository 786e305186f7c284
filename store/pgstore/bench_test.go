package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// BenchmarkProcess measures messages/s through the processor with a batch
// handler that writes one effect row per message in one statement: 100
// messages per transaction, 4 concurrent batches. Compare with
// BenchmarkSeedAlgorithm in the same run:
//
//	go test ./store/pgstore -run '^$' -bench . -benchtime 20000x
func BenchmarkProcess(b *testing.B) {
	benchDups(b, func(b *testing.B, d *pgstore.Driver, dup int) { runLoad(b, d, dup) })
}

// benchDups runs load at 0% and 30% duplicates, each on a fresh schema
// with an effects table.
func benchDups(b *testing.B, load func(*testing.B, *pgstore.Driver, int)) {
	for _, dup := range []int{0, 30} {
		b.Run(fmt.Sprintf("dup=%d%%", dup), func(b *testing.B) { load(b, benchDriver(b, pgstore.Options{}), dup) })
	}
}

// benchDriver migrates a driver with opts on a fresh schema with an
// effects table.
func benchDriver(b *testing.B, opts pgstore.Options) *pgstore.Driver {
	pool := testdb.Require(b)
	schema := testdb.NewSchema(b, pool)
	pool = testdb.PoolIn(b, schema, 8)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	d, err := pgstore.New(pool, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkSeedAlgorithm is the seed's algorithm as written: one
// transaction per message, duplicates by catching the unique violation,
// one worker.
func BenchmarkSeedAlgorithm(b *testing.B) {
	pool := testdb.Require(b)
	schema := testdb.NewSchema(b, pool)
	pool = testdb.PoolIn(b, schema, 2)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE inbox (message_id text PRIMARY KEY, received_at timestamptz DEFAULT now());
		CREATE TABLE effects (message_id text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO inbox (message_id) VALUES ($1)", fmt.Sprint("m-", i)); err != nil {
			tx.Rollback(ctx)
			continue
		}
		if _, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1)", fmt.Sprint("m-", i)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkProcessPartitioned measures the claim's cost of probing older
// partitions: the same load as BenchmarkProcess (no duplicates) on the
// plain layout and on partitioned inboxes with 1, 8 and 32 live periods,
// each older period holding 20,000 rows:
//
//	go test ./store/pgstore -run '^$' -bench ProcessPartitioned -benchtime 20000x
func BenchmarkProcessPartitioned(b *testing.B) {
	for _, live := range []int{0, 1, 8, 32} {
		b.Run(fmt.Sprintf("periods=%d", live), func(b *testing.B) {
			d := benchDriver(b, pgstore.Options{Partitioned: live > 0})
			pool, ctx := d.Pool(), context.Background()
			for p := 1; p < live; p++ {
				if _, err := pool.Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, period)
					SELECT 'bench', 'old-' || $1::bigint || '-' || g, '\x00', $1::bigint FROM generate_series(1, 20000) g`), p); err != nil {
					b.Fatal(err)
				}
				if _, _, err := d.RotatePeriod(ctx, true); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := pool.Exec(ctx, d.Tables().Expand("ANALYZE {inbox}")); err != nil {
				b.Fatal(err)
			}
			runLoad(b, d, 0)
		})
	}
}

// runLoad drives b.N messages through a processor on d, 100 per batch, 4
// batches at once, with a batch handler writing one effects row per message
// in one statement; dup percent of each batch (after the first 200) are
// redeliveries of earlier messages. It reports messages/s.
func runLoad(b *testing.B, d *pgstore.Driver, dup int) {
	runLoadWith(b, d, dup, txinbox.Config[pgx.Tx]{Scope: "bench",
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			_, err := tx.Exec(ctx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", ids)
			return err
		}})
}

// BenchmarkProcessDeclarative is BenchmarkProcess with the effect given
// as SQL (Config.Effect): one autocommitted statement per batch. With
// -benchmem it gives the Go side's allocations per message:
//
//	go test ./store/pgstore -run '^$' -bench Declarative -benchtime 20000x -benchmem
func BenchmarkProcessDeclarative(b *testing.B) {
	benchDups(b, func(b *testing.B, d *pgstore.Driver, dup int) {
		runLoadWith(b, d, dup, txinbox.Config[pgx.Tx]{Scope: "bench", Effect: &txinbox.Effect{
			Statements: []string{"INSERT INTO effects SELECT scope, message_id FROM new_messages"}}})
	})
}

// runLoadWith is runLoad with the processor's configuration given.
func runLoadWith(b *testing.B, d *pgstore.Driver, dup int, cfg txinbox.Config[pgx.Tx]) {
	ctx := context.Background()
	p, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.ResetTimer()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				start := next.Add(100) - 100
				if start >= int64(b.N) {
					return
				}
				msgs := make([]*txinbox.Message, 0, 100)
				for i := start; i < min(start+100, int64(b.N)); i++ {
					id := i
					if int(i%100) < dup && i > 200 {
						id = i - 200 // a redelivery of an earlier message
					}
					msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("m-", id), Payload: []byte("payload")})
				}
				if _, err := p.Process(ctx, msgs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	// The Go side's CPU time per message (this process: the processor,
	// pgx and the benchmark's own message building), which the machine's
	// load moves much less than msgs/s.
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
}

// BenchmarkProcessOffsets measures offsets as the inbox: 4 partitions,
// one worker each, 100 messages per batch moving the partition's
// checkpoint, a batch handler queuing one effect statement (one round
// trip per batch). Compare with BenchmarkOneRowCeiling in the same run.
func BenchmarkProcessOffsets(b *testing.B) {
	d := benchDriver(b, pgstore.Options{})
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "bench",
		BatchHandler: func(_ context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			return pgstore.Queue(tx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", ids)
		}})
	if err != nil {
		b.Fatal(err)
	}
	runPartitions(b, func(ctx context.Context, part int, from int64, ids []string) error {
		msgs, pos := make([]*txinbox.Message, len(ids)), make([]int64, len(ids))
		for i, id := range ids {
			msgs[i], pos[i] = &txinbox.Message{ID: id, Payload: []byte("payload")}, from+int64(i)
		}
		_, _, err := p.ProcessOffsets(ctx, msgs, txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "t", Partition: int32(part), Positions: pos},
			Saved: from - 1})
		return err
	})
	wantEffects(b, d)
}

// wantEffects fails b unless the effects table holds one row per message
// of the run.
func wantEffects(b *testing.B, d *pgstore.Driver) {
	b.Helper()
	var n int
	if err := d.Pool().QueryRow(context.Background(), "SELECT count(*) FROM effects").Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != b.N {
		b.Fatalf("%d effects for %d messages", n, b.N)
	}
}

// BenchmarkOneRowCeiling is PostgreSQL's limit for BenchmarkProcessOffsets'
// effect rows alone: one autocommitted insert of 100 rows per batch.
func BenchmarkOneRowCeiling(b *testing.B) {
	d := benchDriver(b, pgstore.Options{})
	runPartitions(b, func(ctx context.Context, _ int, _ int64, ids []string) error {
		_, err := d.Pool().Exec(ctx, "INSERT INTO effects SELECT 'bench', unnest($1::text[])", ids)
		return err
	})
	wantEffects(b, d)
}

// runPartitions runs b.N messages in batches of 100 on 4 workers, worker
// w owning partition w; batch gets the partition, the position of its
// first message (the partition's next) and the messages' ids.
func runPartitions(b *testing.B, batch func(ctx context.Context, part int, from int64, ids []string) error) {
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var pos int64
			for {
				start := next.Add(100) - 100
				if start >= int64(b.N) {
					return
				}
				ids := make([]string, 0, 100)
				for i := start; i < min(start+100, int64(b.N)); i++ {
					ids = append(ids, fmt.Sprint("m-", i))
				}
				if err := batch(ctx, w, pos, ids); err != nil {
					b.Error(err)
					return
				}
				pos += int64(len(ids))
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
}
