package sourcetest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/source/sourcetest"
)

// The Kafka harness runs the broker suite against source/kafka on kfake
// (franz-go's in-process cluster, started by the parent test process; the
// child consumers connect to it). One partition per topic, so that publish
// order is delivery order.

// cluster is the parent's kfake cluster.
var cluster *kfake.Cluster

func TestMain(m *testing.M) {
	sourcetest.RunChild(kafkaHarness)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kfake:", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var kafkaHarness = kafkaHarnessOn("Kafka (kfake)", nil, false)

// kafkaWatermarkHarness runs the suite with offsets as the inbox
// (kafka.OffsetWatermark): no inbox row, the partition's watermark says
// what is done. The inbox's ids are the records' offsets, so the published
// ids, which the suite counts, travel in the message-id header only: the
// transport's id inputs (a NUL, invalid UTF-8, 5 kB) do not reach the inbox
// and their tests do not apply.
var kafkaWatermarkHarness = kafkaHarnessOn("Kafka (kfake), offsets as the inbox", nil, true)

// kafkaHarnessOn is the harness on kfake (seeds nil) or on the real
// cluster whose seeds it returns, in a consumer group of the classic
// protocol.
func kafkaHarnessOn(name string, seeds func(testing.TB) []string, watermark bool) sourcetest.Harness {
	return kafkaHarnessOf(name, seeds, watermark, false)
}

// kafkaHarnessOf is kafkaHarnessOn with groups of KIP-848's consumer
// protocol when serverSide.
func kafkaHarnessOf(name string, seeds func(testing.TB) []string, watermark, serverSide bool) sourcetest.Harness {
	f := sourcetest.Features{Ordering: true, ConsumerGroups: true, Redelivery: true,
		DeadLetterDestination: true, ResumesAfterCommit: true, BinaryHeaders: true}
	if !watermark {
		f.NULInIDs, f.InvalidUTF8InIDs, f.LongIDs = true, true, true
	}
	return sourcetest.Harness{
		Name: name, Features: f,
		New: func(t *testing.T) (sourcetest.Broker, string) {
			var s []string
			if seeds != nil {
				s = seeds(t)
			}
			b, desc := newKafkaBrokerOf(t, s, watermark, serverSide)
			return b, desc
		},
		Open: openKafkaBroker,
	}
}

func TestKafkaConformance(t *testing.T) {
	sourcetest.Run(t, kafkaHarness)
}

func TestKafkaWatermarkConformance(t *testing.T) {
	sourcetest.Run(t, kafkaWatermarkHarness)
}

// TestApacheKafkaConformance runs the suite, hostile parts and crash tests
// included, against the real Apache Kafka that TXINBOX_TEST_KAFKA_BROKERS names
// (.ci/start-kafka): its group coordinator, not kfake's, sees the SIGKILLed
// children leave.
func TestApacheKafkaConformance(t *testing.T) {
	sourcetest.Run(t, kafkaHarnessOn("Apache Kafka", kafkatest.RequireBrokers, false))
}

// TestApacheKafkaConsumerProtocolConformance is the suite on the real
// Apache Kafka with KIP-848's consumer protocol (the broker assigns the
// partitions; Kafka 4's default path), the group's session timeout set to
// 2 s (a dynamic group config).
func TestApacheKafkaConsumerProtocolConformance(t *testing.T) {
	sourcetest.Run(t, kafkaHarnessOf("Apache Kafka, consumer protocol", kafkatest.RequireBrokers, false, true))
}

// TestApacheKafkaWatermarkConformance is the suite with offsets as the
// inbox on the real Apache Kafka.
func TestApacheKafkaWatermarkConformance(t *testing.T) {
	sourcetest.Run(t, kafkaHarnessOn("Apache Kafka, offsets as the inbox", kafkatest.RequireBrokers, true))
}

// kafkaBroker is one topic, its dead-letter topic and the suite's group.
type kafkaBroker struct {
	Seeds []string `json:"seeds"`
	Topic string   `json:"topic"`
	Group string   `json:"group"`
	// Watermark keeps offsets as the inbox (kafka.OffsetWatermark).
	Watermark bool `json:"watermark"`
	// Real is a real Kafka cluster: Interrupt cuts the consumers'
	// connections (cutter) instead of injecting faults into kfake.
	Real bool `json:"real"`
	// ServerSide runs the group on KIP-848's consumer protocol.
	ServerSide bool `json:"server_side"`
	cutter     kafkatest.Cutter
	// proc is the processor of the last in-process consumer, for the
	// partition watermark (see Pending).
	mu   sync.Mutex
	proc source.Processor
}

func (b *kafkaBroker) deadLetterTopic() string { return b.Topic + "-dlq" }

func randomName(prefix string) string {
	p := make([]byte, 5)
	rand.Read(p)
	return prefix + hex.EncodeToString(p)
}

// newKafkaBrokerOf creates the topics on the real cluster of seeds, or on
// kfake when seeds is nil.
func newKafkaBrokerOf(t *testing.T, seeds []string, watermark, serverSide bool) (sourcetest.Broker, string) {
	t.Helper()
	b := &kafkaBroker{Seeds: seeds, Real: seeds != nil, Topic: randomName("topic-"), Group: randomName("group-"),
		Watermark: watermark, ServerSide: serverSide}
	if !b.Real {
		b.Seeds = cluster.ListenAddrs()
	}
	if serverSide {
		// KIP-848: the session timeout is the group's (Kafka's default
		// 45 s), a dynamic group config.
		if err := kafkatest.SetGroupConfigs(context.Background(), b.Seeds, b.Group, map[string]string{
			"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "500"}); err != nil {
			t.Fatal(err)
		}
	}
	cl, adm := b.admin(t)
	defer cl.Close()
	if _, err := adm.CreateTopics(context.Background(), 1, -1, nil, b.Topic, b.deadLetterTopic()); err != nil {
		t.Fatal(err)
	}
	desc, _ := json.Marshal(b) // strings only
	return b, string(desc)
}

func openKafkaBroker(_ context.Context, desc string) (sourcetest.Broker, error) {
	b := &kafkaBroker{}
	return b, json.Unmarshal([]byte(desc), b)
}

func (b *kafkaBroker) admin(t testing.TB) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seeds...))
	if err != nil {
		t.Fatal(err)
	}
	return cl, kadm.NewClient(cl)
}

func (b *kafkaBroker) Publish(ctx context.Context, msgs ...sourcetest.Message) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		recs[i] = &kgo.Record{Topic: b.Topic, Value: m.Body}
		if m.ID != "" {
			recs[i].Headers = []kgo.RecordHeader{{Key: "message-id", Value: []byte(m.ID)}}
		}
		for _, h := range m.Headers {
			recs[i].Headers = append(recs[i].Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
		}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func (b *kafkaBroker) Consume(ctx context.Context, inbox sourcetest.Inbox) error {
	session := time.Second // short: a SIGKILLed member leaves the group quickly
	inbox.Ordered = true   // a failed record holds back its partition
	var key kafka.Key = kafka.HeaderKey("message-id")
	if b.Watermark {
		key, inbox.Rename = kafka.OffsetWatermark, published
	}
	proc, err := inbox.Processor()
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.proc = proc
	b.mu.Unlock()
	opts := []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(session / 10),
		kgo.RebalanceTimeout(3 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond)}
	if b.Real {
		opts = append(opts, kgo.Dialer(b.cutter.Dial))
	}
	if b.ServerSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	c, err := kafka.New(proc, kafka.Config{
		Seeds: b.Seeds, Topics: []string{b.Topic}, Group: b.Group,
		Key: key, DeadLetterTopic: b.deadLetterTopic(),
		ErrorBackoff:  func(int) time.Duration { return 50 * time.Millisecond },
		ClientOptions: opts,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// Pending is the group's lag: records after its committed offset, or
// after the partition's watermark in the inbox if that is later. The source
// resumes after the watermark and commits an offset only when it
// processes a record, so a final offset commit lost with its connection
// leaves Kafka's committed offset behind until new records arrive.
func (b *kafkaBroker) Pending(ctx context.Context) (int, error) {
	watermarks := map[int32]int64{}
	b.mu.Lock()
	proc := b.proc
	b.mu.Unlock()
	if proc != nil {
		var err error
		if watermarks, err = proc.Checkpoints(ctx, b.Topic); err != nil {
			return 0, err
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seeds...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, b.Topic)
	if err != nil {
		return 0, err
	}
	committed, err := adm.FetchOffsets(ctx, b.Group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(b.Topic, o.Partition)
		done := max(c.At, 0)
		if wm, ok := watermarks[o.Partition]; ok {
			done = max(done, wm+1)
		}
		lag += o.Offset - done
	})
	return int(lag), nil
}

// Interrupt closes the connections that carry the next offset commit and
// the next fetch: the ack (offset commit) of the batch in flight is lost
// with its connection. On a real cluster it closes every connection the
// in-process consumers dialed.
func (b *kafkaBroker) Interrupt() {
	if b.Real {
		b.cutter.Cut()
		return
	}
	for _, key := range []int16{kmsg.OffsetCommit.Int16(), kmsg.Fetch.Int16()} {
		cluster.ControlKey(key, func(kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("sourcetest: connection cut"), true
		})
	}
}

func (b *kafkaBroker) DeadLetters(ctx context.Context) ([][]byte, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seeds...), kgo.ConsumeTopics(b.deadLetterTopic()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Read to the topic's end offsets (a fixed 500 ms of polling could end,
	// under load, before the first fetch).
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(pctx, b.deadLetterTopic())
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, err
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	var bodies [][]byte
	for int64(len(bodies)) < total && pctx.Err() == nil {
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			bodies = append(bodies, r.Value)
		})
	}
	if int64(len(bodies)) < total {
		return nil, fmt.Errorf("read %d of the dead-letter topic's %d records", len(bodies), total)
	}
	return bodies, nil
}

// published returns a copy of m whose ID is its message-id header.
func published(m *txinbox.Message) (*txinbox.Message, bool) {
	for _, h := range m.Headers {
		if h.Key == "message-id" {
			pm := *m
			pm.ID = h.Value
			return &pm, true
		}
	}
	return m, false
}
