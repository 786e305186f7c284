// Package kafka is an outbox target that produces each row as a Kafka
// record with franz-go, waiting for the broker's acknowledgement from all
// in-sync replicas. The producer is idempotent (franz-go's default, kept
// on), so its own retries do not duplicate a record; a row the relay sends
// again after a crash carries the same txinbox-id header for the consumer
// to deduplicate on.
//
// Record topic: Message.Topic, or Config.Topic when the row has none. Key:
// Message.Key. Headers: Message.Headers plus txinbox-id: Message.StableID().
package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/outbox"
)

// HeaderID is the record header carrying the row's stable id.
const HeaderID = "txinbox-id"

// Config configures a Target.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topic is the topic of rows whose Topic is empty. Defaults to none:
	// such rows fail for good.
	Topic string
	// Options are more franz-go client options (TLS, SASL, timeouts).
	// Options that turn off idempotence or lower the acks weaken the
	// guarantees above.
	Options []kgo.Opt
}

// Target produces outbox rows to Kafka. It is safe for concurrent use.
type Target struct {
	cl    *kgo.Client
	topic string
	owned bool
}

var _ outbox.Target = (*Target)(nil)

// New starts a franz-go client for cfg. Close it when done.
func New(cfg Config) (*Target, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("outbox kafka target: Config.Brokers is empty")
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks())}, cfg.Options...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("outbox kafka target: %w", err)
	}
	return &Target{cl: cl, topic: cfg.Topic, owned: true}, nil
}

// NewFromClient sends with an existing client (not closed by Close). topic
// is the topic of rows without one.
func NewFromClient(cl *kgo.Client, topic string) *Target {
	return &Target{cl: cl, topic: topic}
}

// Send produces m and returns once the broker acknowledged it.
func (t *Target) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	topic := m.Topic
	if topic == "" {
		topic = t.topic
	}
	if topic == "" {
		return nil, outbox.Permanent(fmt.Errorf("row %d has no topic and the kafka target has no default (Config.Topic)", m.ID))
	}
	r := &kgo.Record{Topic: topic, Value: m.Payload}
	if m.Key != "" {
		r.Key = []byte(m.Key)
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderID, Value: []byte(m.StableID())})
	if err := t.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return nil, fmt.Errorf("producing to %s: %w", topic, err)
	}
	return fmt.Appendf(nil, "%s/%d@%d", r.Topic, r.Partition, r.Offset), nil
}

// Close flushes and closes the client New started.
func (t *Target) Close() {
	if t.owned {
		t.cl.Close()
	}
}
