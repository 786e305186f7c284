package cli

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
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

func init() { benchKafkaE2E = benchKafka }

// benchKafkaRecords is how many records a slice pre-produces; the slice ends
// when they are all handled or its time is up, whichever comes first, and
// the rate counts only that time. Few enough to keep memory low.
const benchKafkaRecords = 50_000

// benchKafka measures end to end: records already in a 3-broker kfake
// cluster of txinbox-brokers (4 partitions, message-id header keys, a share
// re-sent at new offsets), consumed by one kafka.Consumer into PostgreSQL with a batch
// handler, offsets committed after each batch's commit. The rate counts the
// records handled (processed or skipped as duplicates) during the slice.
func benchKafka(ctx context.Context, o benchOptions, pool *pgxpool.Pool, dup float64) (*benchResult, error) {
	seeds, stopKafka, err := brokers.StartKafka(ctx, 3) // in a txinbox-brokers child process
	if err != nil {
		return nil, err
	}
	defer stopKafka()
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if err := benchKafkaProduce(ctx, seeds, topic, dup); err != nil {
		return nil, err
	}
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return nil, err
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
		Seeds: seeds, Topics: []string{topic}, Group: "bench", Key: kafka.HeaderKey(demoKafkaHeader),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- consumer.Run(rctx) }()
	// The slice starts once the consumer is a member of its group: the
	// group join is start-up, not throughput (on a loaded machine it could
	// take the whole of a short slice).
	if err := benchKafkaAwaitJoin(rctx, consumer, runErr); err != nil {
		cancel()
		<-runErr
		return nil, err
	}
	start := time.Now()
	slice := time.NewTimer(o.duration / time.Duration(o.rounds))
	defer slice.Stop()
	end, stopped, err := benchKafkaSlice(rctx, consumer, slice.C, runErr)
	cancel()
	if !stopped {
		<-runErr // counted below once the consumer has stopped
	}
	if err != nil {
		return nil, err
	}
	elapsed := end.Sub(start).Seconds()
	r := &benchResult{Name: "e2e-kafka", Store: "postgres", Duplicates: dup, Workers: 1, Seconds: elapsed,
		P50ms: lat.percentile(0.5), P99ms: lat.percentile(0.99), lat: &lat}
	var inbox int64
	if err := pool.QueryRow(context.Background(), d.Tables().Expand(
		"SELECT (SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')")).Scan(&r.Effects, &inbox); err != nil {
		return nil, err
	}
	if r.Effects != inbox {
		return nil, fmt.Errorf("e2e-kafka: %d effects for %d inbox rows", r.Effects, inbox)
	}
	// Processed records are counted in the database (a batch that committed
	// as the slice ended is not in the consumer's statistics yet).
	st := consumer.Stats()
	r.Messages = r.Effects + st.Duplicates + st.Drift + st.DeadLettered
	r.MsgsPerSec = float64(r.Messages) / elapsed
	return r, nil
}

// benchKafkaProduce creates the topic and produces the records, a share of
// them re-sends of earlier ids.
func benchKafkaProduce(ctx context.Context, seeds []string, topic string, dup float64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, demoKafkaPartitions, -1, nil, topic); err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	recs := make([]*kgo.Record, benchKafkaRecords)
	for i := range recs {
		id := i
		if i >= 200 && rng.Float64() < dup {
			id = i - 100 - rng.IntN(100) // a producer's re-send of an earlier event
		}
		key := []byte(fmt.Sprint("m-", id))
		recs[i] = &kgo.Record{Topic: topic, Key: key, Value: benchPayload, Headers: []kgo.RecordHeader{{Key: demoKafkaHeader, Value: key}}}
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

// benchKafkaAwaitJoin waits until the consumer has joined its group, for
// at most a minute. Run's result stays on runErr for the caller.
func benchKafkaAwaitJoin(ctx context.Context, c *kafka.Consumer, runErr chan error) error {
	deadline := time.After(time.Minute)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !c.Joined() {
		select {
		case err := <-runErr:
			runErr <- err // the caller waits for Run once more
			return fmt.Errorf("e2e-kafka: consumer stopped before joining its group: %v", err)
		case <-deadline:
			return errors.New("e2e-kafka: the consumer did not join its group within a minute")
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// benchKafkaSlice waits until every pre-produced record is handled or the
// slice's time is up and returns when the slice ended, and whether Run
// has already returned (its result taken from runErr).
func benchKafkaSlice(ctx context.Context, c *kafka.Consumer, sliceEnd <-chan time.Time, runErr <-chan error) (end time.Time, stopped bool, err error) {
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
			if st := c.Stats(); st.Processed+st.Duplicates+st.Drift+st.DeadLettered >= benchKafkaRecords {
				return end, false, nil
			}
		}
	}
}
