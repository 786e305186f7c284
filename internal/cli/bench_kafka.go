package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

func init() { benchKafkaE2E = benchKafka }

// benchKafkaRecords is how many records a slice pre-produces; the slice ends
// when they are all handled or its time is up, whichever comes first, and
// the rate counts only that time. Few enough to keep memory low.
const benchKafkaRecords = 50_000

// benchKafka measures end to end: records already in an embedded 3-broker
// kfake cluster (4 partitions, message-id header keys, a share re-sent at
// new offsets), consumed by one kafka.Consumer into PostgreSQL with a batch
// handler, offsets committed after each batch's commit. The rate counts the
// records handled (processed or skipped as duplicates) during the slice.
func benchKafka(ctx context.Context, o benchOptions, pool *pgxpool.Pool, dup float64) (*benchResult, error) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cluster.Close()
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if err := benchKafkaProduce(ctx, cluster.ListenAddrs(), topic, dup); err != nil {
		return nil, err
	}
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	var lat latencies
	consumer, err := kafka.New(d, kafka.Config[pgx.Tx]{
		Seeds: cluster.ListenAddrs(), Topics: []string{topic}, Group: "bench", Key: kafka.HeaderKey(demoKafkaHeader),
		Inbox: txinbox.Config[pgx.Tx]{MaxBatchSize: o.batch, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Hooks: []txinbox.Hook{batchLatency{&lat}},
			BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
				return benchEffectsHandler(ctx, tx, messageIDs(msgs))
			}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, o.duration/time.Duration(o.rounds))
	defer cancel()
	start := time.Now()
	drained := make(chan time.Time, 1)
	go func() { // end the slice once every record is handled
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for ; rctx.Err() == nil; <-t.C {
			if st := consumer.Stats(); st.Processed+st.Duplicates+st.Drift+st.DeadLettered >= benchKafkaRecords {
				drained <- time.Now()
				cancel()
				return
			}
		}
	}()
	if err := consumer.Run(rctx); err != nil && rctx.Err() == nil {
		return nil, err
	}
	cancel()
	end := time.Now()
	select {
	case end = <-drained:
	default:
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
