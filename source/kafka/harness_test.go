package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// cluster is the Kafka the tests talk to: kfake in the test process, or the
// real Apache Kafka that TXINBOX_TEST_KAFKA_BROKERS names (newRealCluster).
type cluster struct {
	seeds []string
	fake  *kfake.Cluster // nil on a real cluster
	// session is the consumers' session timeout: short, so that a
	// SIGKILLed member leaves the group quickly (a real broker refuses
	// less than its group.min.session.timeout.ms: 6s by default, 1s on
	// the broker .ci/start-kafka starts).
	session time.Duration
	// serverSide runs the groups on KIP-848's consumer protocol
	// (kgo.ServerSideBalancer): the broker assigns the partitions, and
	// the session timeout is the group's consumer.session.timeout.ms.
	serverSide bool
}

// newRealCluster is the real Apache Kafka of kafkatest.RequireBrokers, with
// groups of the classic protocol or, serverSide, of KIP-848's.
func newRealCluster(t testing.TB, serverSide bool) *cluster {
	t.Helper()
	return &cluster{seeds: kafkatest.RequireBrokers(t), session: time.Second, serverSide: serverSide}
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &cluster{seeds: c.ListenAddrs(), fake: c, session: 1500 * time.Millisecond}
}

func (c *cluster) clientOptions() []kgo.Opt {
	st := c.session
	// kfake expires a member whose JoinGroup waits longer than its
	// session timeout without answering the join, which then hangs for
	// the request timeout: keep the rebalance timeout below the session.
	opts := []kgo.Opt{kgo.SessionTimeout(st), kgo.HeartbeatInterval(st / 10), kgo.RebalanceTimeout(st * 2 / 3),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	if c.serverSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if os.Getenv(envLog) != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	return opts
}

// fixture is one test's topic, group and database schema.
type fixture struct {
	t      testing.TB
	c      *cluster
	topic  string
	group  string
	schema string
	pool   *pgxpool.Pool
	driver *pgstore.Driver
	adm    *kadm.Client
	cl     *kgo.Client // producer
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func newFixture(t testing.TB, c *cluster, partitions int32) *fixture {
	t.Helper()
	admin := testdb.Require(t)
	f := &fixture{t: t, c: c, topic: randomName("topic-"), group: randomName("group-")}
	f.schema = testdb.NewSchema(t, admin)
	f.pool = testdb.PoolIn(t, f.schema, 4)
	ctx := context.Background()
	d, err := pgstore.New(f.consumerPool(), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f.driver = d
	// effects has no unique constraint: only the inbox stands between a
	// redelivery and a second effect.
	if _, err := f.pool.Exec(ctx, `CREATE TABLE effects (seq bigserial, message_id text NOT NULL,
		part int NOT NULL, off bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	f.newProducer()
	if _, err := f.adm.CreateTopic(ctx, partitions, -1, nil, f.topic); err != nil {
		t.Fatal(err)
	}
	return f
}

// appName names the connections of the consumers' pool, so that a test
// can cut them (and only them) with pg_terminate_backend.
func (f *fixture) appName() string { return "txinbox-kafka-" + f.schema }

// consumerPool opens the pool of the in-process consumers: the test's
// schema, named connections.
func (f *fixture) consumerPool() *pgxpool.Pool {
	f.t.Helper()
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		f.t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = f.schema
	cfg.ConnConfig.RuntimeParams["application_name"] = f.appName()
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(pool.Close)
	return pool
}

// newProducer gives the fixture a new producer and admin client.
func (f *fixture) newProducer() {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.c.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(cl.Close)
	f.cl, f.adm = cl, kadm.NewClient(cl)
}

// offsetKeys returns the OffsetKey ids of the records that produce(all,
// partitions) wrote to a new topic.
func (f *fixture) offsetKeys(all []string, partitions int32) []string {
	next := map[int32]int{}
	out := make([]string, len(all))
	for i, id := range all {
		p := partitionOf(id, partitions)
		out[i] = fmt.Sprintf("%s/%d/%d", f.topic, p, next[p])
		next[p]++
	}
	return out
}

// insertEffect is the test's side effect: one row per handled record.
func insertEffect(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	var part int
	var off int64
	if _, err := fmt.Sscanf(m.SourcePosition, "%d:%d", &part, &off); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO effects (message_id, part, off) VALUES ($1, $2, $3)`, m.ID, part, off)
	return err
}

// consumerConfig is the configuration shared by the in-process consumers
// and the child processes: header keys, so re-sends are duplicates.
func (f *fixture) consumerConfig() consumerConfig {
	return consumerConfig{
		Config: kafka.Config{
			Seeds: f.c.seeds, Topics: []string{f.topic}, Group: f.group,
			Key:           kafka.HeaderKey("message-id"),
			ErrorBackoff:  func(int) time.Duration { return 50 * time.Millisecond },
			ClientOptions: f.c.clientOptions(),
			Logger:        quietLogger(),
		},
		Inbox: txinbox.Config[pgx.Tx]{Scope: f.group, Ordered: true, Handler: insertEffect,
			Backoff: func(int) time.Duration { return 20 * time.Millisecond }},
	}
}

// consumerConfig is a consumer's Config and its processor's.
type consumerConfig struct {
	kafka.Config
	Inbox txinbox.Config[pgx.Tx]
}

// newConsumer builds the processor of cfg over d, then the consumer.
func newConsumer(d store.Driver[pgx.Tx], cfg consumerConfig) (*kafka.Consumer, error) {
	proc, err := txinbox.NewProcessor(d, cfg.Inbox)
	if err != nil {
		return nil, err
	}
	return kafka.New(proc, cfg.Config)
}

// running is an in-process consumer.
type running struct {
	c    *kafka.Consumer
	stop func()
}

func (f *fixture) start(cfg consumerConfig) *running {
	f.t.Helper()
	c, err := newConsumer(f.driver, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			f.t.Errorf("Run: %v", err)
		}
	})
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	f.t.Cleanup(stop)
	return &running{c: c, stop: stop}
}

// produce publishes one record per id to partition i%partitions of the
// id's index, with the id in the message-id header, and waits for the acks.
func (f *fixture) produce(ids []string, partitions int32) {
	f.t.Helper()
	recs := make([]*kgo.Record, len(ids))
	for i, id := range ids {
		recs[i] = &kgo.Record{Topic: f.topic, Partition: partitionOf(id, partitions), Value: []byte("payload of " + id),
			Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
	}
	if err := f.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.t.Fatalf("producing: %v", err)
	}
}

// partitionOf keeps an id's re-sends on its partition, as a keyed
// producer would.
func partitionOf(id string, partitions int32) int32 {
	var h uint32
	for i := 0; i < len(id); i++ {
		h = h*31 + uint32(id[i])
	}
	return int32(h % uint32(partitions))
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, state)
		}
		<-tick.C
	}
}

// lag returns, per partition, the end offset minus the group's committed
// offset (all of the end when nothing is committed).
func (f *fixture) lag() (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := f.adm.ListEndOffsets(ctx, f.topic)
	if err != nil {
		return nil, err
	}
	committed, err := f.adm.FetchOffsets(ctx, f.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(f.topic, o.Partition)
		out[o.Partition] = o.Offset - max(c.At, 0)
	})
	return out, nil
}

// waitCommitted waits until the group's committed offsets reach the end of
// every partition.
func (f *fixture) waitCommitted(timeout time.Duration) {
	f.t.Helper()
	waitFor(f.t, timeout, "every offset committed", func() (bool, string) {
		lag, err := f.lag()
		if err != nil {
			return false, err.Error()
		}
		for _, l := range lag {
			if l != 0 {
				return false, fmt.Sprintf("lag %v", lag)
			}
		}
		return true, ""
	})
}

// effects counts the effect rows per message id.
func (f *fixture) effects() map[string]int {
	f.t.Helper()
	rows, _ := f.pool.Query(context.Background(), `SELECT message_id, count(*) FROM effects GROUP BY message_id`)
	out := map[string]int{}
	var id string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil }); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// checkExactlyOnce fails unless every id has exactly one effect and there
// is no other effect.
func (f *fixture) checkExactlyOnce(want []string) {
	f.t.Helper()
	got := f.effects()
	lost, doubled := 0, 0
	for _, id := range want {
		switch n := got[id]; {
		case n == 0:
			lost++
		case n > 1:
			doubled += n - 1
		}
		delete(got, id)
	}
	if lost > 0 || doubled > 0 || len(got) > 0 {
		f.t.Errorf("not exactly once: %d lost, %d double effects, %d unexpected ids", lost, doubled, len(got))
	}
}
