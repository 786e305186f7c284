package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
)

// The Kafka demo: the parent process starts a kfake cluster of three
// brokers in a txinbox-brokers child process (or uses --kafka-brokers),
// publishes the plan to a topic (re-sends at new offsets,
// with the event id in the message-id header) and runs consumer child
// processes ("demo-consumer-kafka") of one consumer group, one at a time,
// SIGKILLing them at the demo's crash points. A child reports each
// committed outcome as a demoReply line and announces a crash point with
// demoReply.At.

const (
	// KafkaPartitions is the demo topic's number of partitions.
	KafkaPartitions = 4
	// KafkaHeader is the record header that carries the message id.
	KafkaHeader = "message-id"
	// KafkaSession is the children's session timeout: a SIGKILLed
	// child leaves the group this long after its death. On a cluster of
	// --kafka-brokers it is at least the brokers' minimum
	// (group.min.session.timeout.ms, 6 s by Kafka's default): a broker
	// refuses a group member with a shorter one.
	KafkaSession = 600 * time.Millisecond
)

// kafkaBroker is the demo's Kafka cluster and the run's topic; the queue
// demo runner (runQueueDemo) drives it like the other brokers.
type kafkaBroker struct {
	brokers *brokers.Running // nil with --kafka-brokers
	seeds   []string
	topic   string
	session time.Duration // the children's session timeout
	cl      *kgo.Client
	adm     *kadm.Client
}

var _ queueBroker = (*kafkaBroker)(nil)

func runDemoKafka(ctx context.Context, env *clikit.Env, o Options) (*demoSummary, error) {
	return runQueueDemo(ctx, env, o, func(ctx context.Context, run string) (queueBroker, error) {
		return startKafkaDemo(ctx, env, o.External, run)
	})
}

// startKafkaDemo starts three kfake brokers (unless --kafka-brokers names
// a cluster) and creates a topic for the run: the partitions' watermarks in
// the inbox database belong to their topic, and a new cluster's offsets
// start at 0.
func startKafkaDemo(ctx context.Context, env *clikit.Env, ext demoExternal, run string) (queueBroker, error) {
	b := &kafkaBroker{seeds: ext.KafkaSeeds(), topic: "invoices-" + run, session: KafkaSession}
	if len(b.seeds) == 0 {
		r, err := StartBrokers(ctx, env, brokers.Options{Kafka: 3})
		if err != nil {
			return nil, err
		}
		b.brokers, b.seeds = r, r.KafkaSeeds
	}
	var err error
	if b.cl, err = kgo.NewClient(kgo.SeedBrokers(b.seeds...)); err != nil {
		b.stopBrokers()
		return nil, err
	}
	b.adm = kadm.NewClient(b.cl)
	if b.brokers == nil {
		if b.session, err = KafkaSessionOn(ctx, b.adm); err != nil {
			b.close()
			return nil, err
		}
	}
	if _, err := b.adm.CreateTopic(ctx, KafkaPartitions, -1, nil, b.topic); err != nil {
		b.close()
		return nil, fmt.Errorf("creating topic %s: %w", b.topic, err)
	}
	return b, nil
}

func (b *kafkaBroker) where() string {
	if b.brokers != nil {
		return "kfake 3 brokers"
	}
	return "Kafka at " + strings.Join(b.seeds, ",")
}

func (b *kafkaBroker) close() {
	b.cl.Close()
	b.stopBrokers()
}

func (b *kafkaBroker) stopBrokers() {
	if b.brokers != nil {
		b.brokers.Stop() //nolint:errcheck // best effort at the end
	}
}

func (b *kafkaBroker) childArgs() []string {
	return []string{"demo-consumer-kafka", "--seeds", b.seeds[0], "--topic", b.topic, "--session-timeout", b.session.String()}
}

// KafkaSessionOn is the session timeout of the demos' consumers on the
// cluster of adm (a --kafka-brokers cluster): KafkaSession, or the brokers'
// group.min.session.timeout.ms if that is longer (a broker refuses a
// group member with a shorter session).
func KafkaSessionOn(ctx context.Context, adm *kadm.Client) (time.Duration, error) {
	least, err := minSessionTimeout(ctx, adm)
	return max(least, KafkaSession), err
}

// minSessionTimeout reads a broker's group.min.session.timeout.ms: the
// shortest session timeout the cluster lets a group member have.
func minSessionTimeout(ctx context.Context, adm *kadm.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) == 0 {
		return 0, fmt.Errorf("reading the cluster's brokers: %v", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
	if err != nil {
		return 0, fmt.Errorf("reading the brokers' group.min.session.timeout.ms: %w", err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "group.min.session.timeout.ms" && c.Value != nil {
				ms, err := strconv.ParseInt(*c.Value, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("the brokers' group.min.session.timeout.ms %q: %w", *c.Value, err)
				}
				return time.Duration(ms) * time.Millisecond, nil
			}
		}
	}
	return 0, errors.New("the brokers do not say their group.min.session.timeout.ms")
}

// publish produces the stream; an event's re-send lands on the event's
// partition (keyed by its id) at a new offset.
func (b *kafkaBroker) publish(ctx context.Context, ids, payloads []string, stream []int) error {
	recs := make([]*kgo.Record, len(stream))
	for i, m := range stream {
		recs[i] = &kgo.Record{Topic: b.topic, Key: []byte(ids[m]), Value: []byte(payloads[m]),
			Headers: []kgo.RecordHeader{{Key: KafkaHeader, Value: []byte(ids[m])}}}
	}
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("publishing to %s: %w", b.topic, err)
	}
	return nil
}

// pending is the group's lag: the records not committed yet, over all
// partitions. It is exact whether or not a consumer runs.
func (b *kafkaBroker) pending(ctx context.Context) (int, bool, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := b.adm.ListEndOffsets(lctx, b.topic)
	if err != nil {
		return 0, false, fmt.Errorf("listing the end offsets: %w", err)
	}
	committed, err := b.adm.FetchOffsets(lctx, demoScope)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return 0, false, fmt.Errorf("fetching the group's offsets: %w", err)
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(b.topic, o.Partition)
		lag += o.Offset - max(c.At, 0)
	})
	return int(lag), true, nil
}

// RunConsumerKafka is the hidden child command: one member of the
// demo's consumer group, until its stdin closes or it is killed.
func RunConsumerKafka(ctx context.Context, env *clikit.Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer-kafka", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f queueChildFlags
	f.register(fs, env)
	seeds := fs.String("seeds", "", "a broker of the cluster")
	topic := fs.String("topic", "", "the topic to consume")
	session := fs.Duration("session-timeout", KafkaSession, "the group session timeout")
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	return runQueueChild(ctx, env, &f, "demo-consumer-kafka", func(ctx context.Context, c *demoConsumer, db *clikit.InboxDB) error {
		if db.PG != nil {
			return consumeKafka(ctx, c, db.PG, clikit.PGTxExec, *seeds, *topic, *session)
		}
		return consumeKafka(ctx, c, db.SQL, db.SQLExec(), *seeds, *topic, *session)
	})
}

func consumeKafka[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec clikit.TxExecFunc[TTx], seeds, topic string, session time.Duration) error {
	var key kafka.Key = kafka.HeaderKey(KafkaHeader)
	if c.sabotage == SabotageDeliveryKey {
		key = kafka.OffsetKey // a producer's re-send is a new record: applied twice
	}
	inbox := queueInboxConfig(c, exec)
	inbox.Ordered = true
	proc, err := txinbox.NewProcessor(d, inbox)
	if err != nil {
		return err
	}
	consumer, err := kafka.New(proc, kafka.Config{
		Seeds: []string{seeds}, Topics: []string{topic}, Group: demoScope,
		Key: key,
		// One partition at a time: queueDemoHook finds the end of a batch
		// by counting outcomes, which batches in parallel would interleave.
		Concurrency: 1,
		// kfake expires a member whose JoinGroup waits longer than its
		// session timeout (and leaves the join unanswered until the request
		// times out): the rebalance timeout stays below the session.
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(session / 10),
			kgo.RebalanceTimeout(session * 2 / 3), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.WithLogger(kgo.BasicLogger(c.stderr, kgo.LogLevelInfo, nil))},
		Logger: c.log,
	})
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}
