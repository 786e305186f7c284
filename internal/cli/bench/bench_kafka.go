package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/bench/scaleout"
	"github.com/txinbox/txinbox/internal/cli/demo"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

// defaultKafkaRecords is how many records a Kafka slice pre-produces
// (--kafka-records); the slice ends when they are all handled or its time
// is up, whichever comes first, and the rate counts only that time.
// Enough that a slice of 2 s at 100k records/s does not run out: the rate
// includes fetching during the slice, not only the drain of what the
// client fetched before it began (the rates of 50,000-record slices were
// such bursts).
const defaultKafkaRecords = 200_000

// benchStartKafka starts the Kafka cluster that the Kafka scenarios
// consume, listening on loopback, and returns its seed brokers and its
// stop: the one place that knows how the bench gets a cluster (a 3-broker
// kfake cluster in a txinbox-brokers child process, reachable from the
// scale-out's serve processes too).
func benchStartKafka(ctx context.Context) (seeds []string, stop func(), err error) {
	seeds, stop, err = brokers.StartKafka(ctx, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("starting the Kafka cluster: %w", err)
	}
	return seeds, stop, nil
}

// benchKafkaCluster is the cluster of a run's e2e-kafka and
// kafka-watermark slices: started by the first slice that needs it,
// stopped with the run. Sharing it is sound: each slice has a topic and a
// group of its own (deleted after it), and its time starts only once its
// consumer committed a first batch.
type benchKafkaCluster struct {
	seeds []string
	stop  func()
	// broker names a cluster the run did not start (--kafka-brokers),
	// whose seeds are given: "" for the run's own kfake.
	broker string
}

func (k *benchKafkaCluster) get(ctx context.Context) ([]string, error) {
	if k.broker == "" && k.stop == nil {
		seeds, stop, err := benchStartKafka(ctx)
		if err != nil {
			return nil, err
		}
		k.seeds, k.stop = seeds, stop
	}
	return k.seeds, nil
}

// close stops the cluster, if it was started.
func (k *benchKafkaCluster) close() {
	if k.stop != nil {
		k.stop()
		k.stop = nil
	}
}

// benchKafkaDelete deletes a slice's topic, so that the cluster does not
// keep every slice's records.
func benchKafkaDelete(seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kadm.NewClient(cl).DeleteTopics(ctx, topic) //nolint:errcheck // best effort: the cluster ends with the run
}

// benchKafka measures end to end: records already in Kafka (4 partitions,
// a share re-sent at new offsets), consumed by one kafka.Consumer into
// PostgreSQL with a batch handler, offsets committed after each batch's
// commit. The e2e-kafka scenario keys the records on a message-id header;
// kafka-watermark keys them on their offsets. The rate counts the records
// handled (processed or skipped as duplicates) during the slice.
func benchKafka(ctx context.Context, o benchOptions, pool *pgxpool.Pool, k *benchKafkaCluster, dup float64, watermark bool) (*benchResult, error) {
	seeds, err := k.get(ctx)
	if err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	defer benchKafkaDelete(seeds, topic)
	if err := benchKafkaProduce(ctx, seeds, topic, dup, o.kafkaRecords); err != nil {
		return nil, err
	}
	own, app, err := benchKafkaPool(ctx, pool, topic)
	if err != nil {
		return nil, err
	}
	defer own.Close()
	d, err := pgstore.New(own, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	var key kafka.Key = kafka.HeaderKey(demo.KafkaHeader)
	name := "e2e-kafka"
	if watermark {
		name, key = "kafka-watermark", kafka.OffsetWatermark
	}
	var lat latencies
	proc, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "bench", Ordered: true, MaxBatchSize: o.batch,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks: []txinbox.Hook{batchLatency{&lat}},
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			return benchEffectsHandler(ctx, tx, messageIDs(msgs))
		}})
	if err != nil {
		return nil, err
	}
	consumer, err := kafka.New(proc, kafka.Config{
		Seeds: seeds, Topics: []string{topic}, Group: topic, Key: key,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- consumer.Run(rctx) }()
	// The slice starts once the consumer is a member of its group and its
	// first batch committed: the group join and the first fetch are
	// start-up, not throughput (on a loaded machine they could take the
	// whole of a short slice).
	st0, err := benchKafkaAwaitStart(rctx, consumer, runErr)
	if err != nil {
		cancel()
		<-runErr
		return nil, err
	}
	start := time.Now()
	slice := time.NewTimer(o.duration / time.Duration(o.rounds))
	defer slice.Stop()
	end, stopped, err := benchKafkaSlice(rctx, consumer, o.kafkaRecords, slice.C, runErr)
	cancel()
	if !stopped {
		<-runErr // counted below once the consumer has stopped
	}
	if err != nil {
		return nil, err
	}
	if err := benchKafkaSettle(ctx, pool, own, app); err != nil {
		return nil, err
	}
	elapsed := end.Sub(start).Seconds()
	r := &benchResult{Name: name, Store: "postgres", Broker: k.broker, Duplicates: dup, Workers: 1, Seconds: elapsed,
		P50ms: lat.percentile(0.5), P99ms: lat.percentile(0.99), lat: &lat}
	check := benchKafkaOnce
	if watermark {
		check = benchWatermarkOnce
	}
	if err := check(pool, d, r, topic); err != nil {
		return nil, err
	}
	// Processed records are counted in the database (a batch that committed
	// as the slice ended is not in the consumer's statistics yet).
	st := consumer.Stats()
	r.Messages = r.Effects + st.Duplicates + st.Drift + st.DeadLettered - benchKafkaHandled(st0)
	r.Effects -= st0.Processed // those of the slice
	r.MsgsPerSec = float64(r.Messages) / elapsed
	return r, nil
}

// benchKafkaPool is a pool of its own for a slice's consumer, its sessions
// named after the slice's topic (the application name it returns), so
// that benchKafkaSettle can wait for them to end.
func benchKafkaPool(ctx context.Context, pool *pgxpool.Pool, topic string) (*pgxpool.Pool, string, error) {
	cfg := pool.Config()
	app := "txinbox-" + topic
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	return own, app, err
}

// benchKafkaSettle closes the stopped consumer's pool (own) and waits, for
// at most 30 seconds, until the server has no session of it left. Run's
// context ending while a batch's COMMIT was on its way leaves the client
// no answer to wait for, but the server still runs the statements it was
// sent (the effects and the COMMIT go in one round trip): on a loaded
// machine they landed after the next scenario emptied the tables, which
// then had a batch of effects without inbox rows.
func benchKafkaSettle(ctx context.Context, pool, own *pgxpool.Pool, app string) error {
	own.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d database sessions of the stopped consumer still open after 30s", n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// benchKafkaProduce creates the topic and produces the records, a share of
// them re-sends of earlier ids.
func benchKafkaProduce(ctx context.Context, seeds []string, topic string, dup float64, n int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, demo.KafkaPartitions, -1, nil, topic); err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := i
		if i >= 200 && rng.Float64() < dup {
			id = i - 100 - rng.IntN(100) // a producer's re-send of an earlier event
		}
		key := []byte(fmt.Sprint("m-", id))
		recs[i] = &kgo.Record{Topic: topic, Key: key, Value: benchPayload, Headers: []kgo.RecordHeader{{Key: demo.KafkaHeader, Value: key}}}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// batchLatency records each batch's duration for every message in it.
type batchLatency struct{ lat *latencies }

func (h batchLatency) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	if info.Err == nil {
		h.lat.add(info.Duration, info.Size)
	}
}

// benchKafkaAwaitStart waits, for at most a minute, until the consumer
// has joined its group and handled records, and returns its statistics
// then. Run's result stays on runErr for the caller.
func benchKafkaAwaitStart(ctx context.Context, c *kafka.Consumer, runErr chan error) (kafka.Stats, error) {
	deadline := time.After(time.Minute)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if st := c.Stats(); c.Joined() && benchKafkaHandled(st) > 0 {
			return st, nil
		}
		select {
		case err := <-runErr:
			runErr <- err // the caller waits for Run once more
			return kafka.Stats{}, fmt.Errorf("e2e-kafka: consumer stopped before its first batch: %v", err)
		case <-deadline:
			return kafka.Stats{}, errors.New("e2e-kafka: the consumer did not join its group and commit a batch within a minute")
		case <-ctx.Done():
			return kafka.Stats{}, ctx.Err()
		case <-t.C:
		}
	}
}

func benchKafkaHandled(st kafka.Stats) int64 {
	return st.Processed + st.Duplicates + st.Drift + st.DeadLettered
}

// benchKafkaSlice waits until every pre-produced record is handled or the
// slice's time is up and returns when the slice ended, and whether Run
// has already returned (its result taken from runErr).
func benchKafkaSlice(ctx context.Context, c *kafka.Consumer, records int64, sliceEnd <-chan time.Time, runErr <-chan error) (end time.Time, stopped bool, err error) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-runErr:
			if ctx.Err() == nil {
				return time.Time{}, true, fmt.Errorf("e2e-kafka: consumer stopped: %v", err)
			}
			return time.Now(), true, nil
		case end := <-sliceEnd:
			return end, false, nil
		case <-ctx.Done():
			return time.Now(), false, nil
		case end := <-t.C:
			if benchKafkaHandled(c.Stats()) >= records {
				return end, false, nil
			}
		}
	}
}

// benchKafkaOnce is e2e-kafka's check: one effect per inbox row.
func benchKafkaOnce(pool *pgxpool.Pool, d *pgstore.Driver, r *benchResult, _ string) error {
	var inbox int64
	if err := pool.QueryRow(context.Background(), d.Tables().Expand(
		"SELECT (SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')")).Scan(&r.Effects, &inbox); err != nil {
		return err
	}
	if r.Effects != inbox {
		return fmt.Errorf("%s: %d effects for %d inbox rows", r.Name, r.Effects, inbox)
	}
	return nil
}

// benchWatermarkOnce is kafka-watermark's check, with no inbox row to
// count: every record up to its partition's watermark has exactly one
// effect (offsets start at 0 and have no gaps here), and none past it.
func benchWatermarkOnce(pool *pgxpool.Pool, d *pgstore.Driver, r *benchResult, topic string) error {
	var distinct, covered, inbox int64
	if err := pool.QueryRow(context.Background(), d.Tables().Expand(`SELECT (SELECT count(*) FROM effects),
		(SELECT count(DISTINCT message_id) FROM effects),
		(SELECT coalesce(sum(position + 1), 0) FROM {checkpoints} WHERE scope = 'bench' AND source = $1),
		(SELECT count(*) FROM {inbox})`), topic).Scan(&r.Effects, &distinct, &covered, &inbox); err != nil {
		return err
	}
	if r.Effects != distinct || r.Effects != covered || inbox != 0 {
		return fmt.Errorf("%s: %d effects, %d distinct, for %d records under the watermarks (and %d inbox rows)",
			r.Name, r.Effects, distinct, covered, inbox)
	}
	return nil
}

// scalePoint is one drain of the scale-out scenario.
type scalePoint = scaleout.Point

// scaleOut runs the scale-out scenario (package scaleout) on an
// in-process Kafka cluster of its own and the bench schema.
func (be *benchEnv) scaleOut(ctx context.Context) ([]scalePoint, error) {
	seeds, stop, err := benchStartKafka(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	return scaleout.Run(ctx, scaleout.Config{
		Seeds: seeds, Pool: be.pool, DB: be.o.db, Schema: be.schema, EffectSQL: benchEffectSQL,
		ServeBin: be.o.serveBin, Rounds: be.o.rounds, Kills: be.o.scaleKills, Counts: be.o.scaleOut,
		Records: be.o.scaleRecords, Payload: benchPayload, Truncate: be.truncate, Progress: be.progress,
	})
}
