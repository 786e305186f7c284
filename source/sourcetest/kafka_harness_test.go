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
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/source/sourcetest"
	"github.com/txinbox/txinbox/store"
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

var kafkaHarness = sourcetest.Harness{
	Name: "Kafka (kfake)",
	Features: sourcetest.Features{Ordering: true, ConsumerGroups: true, Redelivery: true,
		DeadLetterDestination: true, ResumesAfterCommit: true,
		NULInIDs: true, InvalidUTF8InIDs: true, LongIDs: true, BinaryHeaders: true},
	New:  newKafkaBroker,
	Open: openKafkaBroker,
}

func TestKafkaConformance(t *testing.T) {
	sourcetest.Run(t, kafkaHarness)
}

// kafkaBroker is one topic, its dead-letter topic and the suite's group.
type kafkaBroker struct {
	Seeds []string `json:"seeds"`
	Topic string   `json:"topic"`
	Group string   `json:"group"`
	// inbox is the driver and scope of the last in-process consumer, for
	// the partition watermark (see Pending).
	mu    sync.Mutex
	inbox store.Driver[pgx.Tx]
	scope string
}

func (b *kafkaBroker) deadLetterTopic() string { return b.Topic + "-dlq" }

func randomName(prefix string) string {
	p := make([]byte, 5)
	rand.Read(p)
	return prefix + hex.EncodeToString(p)
}

func newKafkaBroker(t *testing.T) (sourcetest.Broker, string) {
	t.Helper()
	b := &kafkaBroker{Seeds: cluster.ListenAddrs(), Topic: randomName("topic-"), Group: randomName("group-")}
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

func (b *kafkaBroker) Consume(ctx context.Context, d store.Driver[pgx.Tx], inbox txinbox.Config[pgx.Tx]) error {
	b.mu.Lock()
	b.inbox, b.scope = d, inbox.Scope
	b.mu.Unlock()
	session := time.Second // short: a SIGKILLed member leaves the group quickly
	inbox.Ordered = true   // a failed record holds back its partition
	proc, err := txinbox.NewProcessor(d, inbox)
	if err != nil {
		return err
	}
	c, err := kafka.New(proc, kafka.Config{
		Seeds: b.Seeds, Topics: []string{b.Topic}, Group: b.Group,
		Key: kafka.HeaderKey("message-id"), DeadLetterTopic: b.deadLetterTopic(),
		ErrorBackoff: func(int) time.Duration { return 50 * time.Millisecond },
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(session / 10),
			kgo.RebalanceTimeout(3 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond)},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
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
	watermarks := map[string]int64{}
	b.mu.Lock()
	d, scope := b.inbox, b.scope
	b.mu.Unlock()
	if d != nil {
		var err error
		if watermarks, err = d.Checkpoints(ctx, scope, b.Topic); err != nil {
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
		if wm, ok := watermarks[strconv.Itoa(int(o.Partition))]; ok {
			done = max(done, wm+1)
		}
		lag += o.Offset - done
	})
	return int(lag), nil
}

// Interrupt closes the connections that carry the next offset commit and
// the next fetch: the ack (offset commit) of the batch in flight is lost
// with its connection.
func (b *kafkaBroker) Interrupt() {
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
	pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var bodies [][]byte
	for pctx.Err() == nil {
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			bodies = append(bodies, r.Value)
		})
	}
	return bodies, nil
}
