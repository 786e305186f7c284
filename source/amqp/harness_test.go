package amqp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/source/sourcetest"
)

func TestMain(m *testing.M) {
	sourcetest.RunChild(harness(true))
	goleak.VerifyTestMain(m)
}

func harness(quorum bool) sourcetest.Harness {
	name := "RabbitMQ classic queue"
	if quorum {
		name = "RabbitMQ quorum queue"
	}
	return sourcetest.Harness{
		Name: name,
		Features: sourcetest.Features{Ordering: true, ConsumerGroups: true, Redelivery: true, DeadLetterDestination: true,
			NULInIDs: true, InvalidUTF8InIDs: true, LongIDs: true, BinaryHeaders: true},
		New:  func(t *testing.T) (sourcetest.Broker, string) { return newBroker(t, quorum) },
		Open: openBroker,
	}
}

func TestConformance(t *testing.T) {
	amqptest.Require(t)
	t.Run("quorum", func(t *testing.T) { sourcetest.Run(t, harness(true)) })
	t.Run("classic", func(t *testing.T) { sourcetest.Run(t, harness(false)) })
}

// TestConformanceMariaDB runs the suite over a quorum queue with the inbox
// on MariaDB (store/mysqlstore, TXINBOX_MYSQL_URL).
func TestConformanceMariaDB(t *testing.T) {
	amqptest.Require(t)
	h := harness(true)
	h.Name += " on MariaDB"
	h.Store = sourcetest.MySQLStore
	sourcetest.Run(t, h)
}

// broker is one queue with its dead-letter exchange and queue; consumers
// connect through a proxy that Interrupt cuts.
type broker struct {
	URL    string `json:"url"` // the consumers' URL (the proxy)
	Direct string `json:"direct"`
	Queue  string `json:"queue"`
	proxy  *sourcetest.Proxy
}

func (b *broker) dlx() string { return b.Queue + "-dlx" }
func (b *broker) dlq() string { return b.Queue + "-dlq" }

func randomName(prefix string) string {
	p := make([]byte, 5)
	rand.Read(p)
	return prefix + hex.EncodeToString(p)
}

func newBroker(t *testing.T, quorum bool) (sourcetest.Broker, string) {
	t.Helper()
	b := &broker{Direct: amqptest.URL(), Queue: randomName("sourcetest-")}
	u, err := url.Parse(b.Direct)
	if err != nil {
		t.Fatal(err)
	}
	b.proxy = sourcetest.NewProxy(t, u.Host)
	u.Host = b.proxy.Addr()
	b.URL = u.String()
	args := amqp091.Table{}
	if quorum {
		args["x-queue-type"] = "quorum"
	}
	b.channel(t, func(ch *amqp091.Channel) error {
		if _, err := ch.QueueDeclare(b.Queue, true, false, false, false, args); err != nil {
			return err
		}
		if err := ch.ExchangeDeclare(b.dlx(), "fanout", true, false, false, false, nil); err != nil {
			return err
		}
		if _, err := ch.QueueDeclare(b.dlq(), true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(b.dlq(), "", b.dlx(), false, nil)
	})
	t.Cleanup(func() {
		b.channel(t, func(ch *amqp091.Channel) error {
			ch.QueueDelete(b.Queue, false, false, false) //nolint:errcheck // best effort
			ch.QueueDelete(b.dlq(), false, false, false) //nolint:errcheck // best effort
			return ch.ExchangeDelete(b.dlx(), false, false)
		})
	})
	desc, _ := json.Marshal(b) // strings only
	return b, string(desc)
}

// channel runs f on a channel of a direct connection.
func (b *broker) channel(t testing.TB, f func(*amqp091.Channel) error) {
	t.Helper()
	if err := b.withChannel(f); err != nil {
		t.Fatal(err)
	}
}

func (b *broker) withChannel(f func(*amqp091.Channel) error) error {
	conn, err := amqp091.Dial(b.Direct)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	return f(ch)
}

func openBroker(_ context.Context, desc string) (sourcetest.Broker, error) {
	b := &broker{}
	return b, json.Unmarshal([]byte(desc), b)
}

func (b *broker) Publish(ctx context.Context, msgs ...sourcetest.Message) error {
	return b.withChannel(func(ch *amqp091.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		for _, m := range msgs {
			pub := amqp091.Publishing{MessageId: m.ID, Body: m.Body, DeliveryMode: amqp091.Persistent}
			if len(m.ID) > 255 { // more than a shortstr holds: in a header (see Consume)
				pub.MessageId, pub.Headers = "", amqp091.Table{idHeader: m.ID}
			}
			for _, h := range m.Headers {
				if pub.Headers == nil {
					pub.Headers = amqp091.Table{}
				}
				pub.Headers[h.Key] = h.Value
			}
			conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", b.Queue, true, false, pub)
			if err != nil {
				return err
			}
			if ok, err := conf.WaitContext(ctx); err != nil || !ok {
				return err
			}
		}
		return nil
	})
}

// idHeader carries an id longer than the message_id property (a
// shortstr) holds.
const idHeader = "message-id"

// Consume keys on message_id, or on the idHeader header when it is set.
func (b *broker) Consume(ctx context.Context, inbox sourcetest.Inbox) error {
	header := amqp.HeaderKey(idHeader)
	proc, err := inbox.Processor()
	if err != nil {
		return err
	}
	c, err := amqp.New(proc, amqp.Config{
		URL: b.URL, Queue: b.Queue, DeadLetterExchange: b.dlx(),
		Key: func(d *amqp091.Delivery) string {
			if id := header(d); id != "" {
				return id
			}
			return d.MessageId
		},
		ErrorBackoff: func(int) time.Duration { return 50 * time.Millisecond },
		Logger:       inbox.Logger,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func (b *broker) Pending(context.Context) (int, error) {
	var n int
	err := b.withChannel(func(ch *amqp091.Channel) error {
		q, err := ch.QueueDeclarePassive(b.Queue, true, false, false, false, nil)
		n = q.Messages
		return err
	})
	return n, err
}

func (b *broker) Interrupt() { b.proxy.Cut() }

// DeadLetters reads the dead-letter queue without acking: closing the
// channel puts everything back.
func (b *broker) DeadLetters(context.Context) ([][]byte, error) {
	var bodies [][]byte
	err := b.withChannel(func(ch *amqp091.Channel) error {
		for {
			d, ok, err := ch.Get(b.dlq(), false)
			if err != nil || !ok {
				return err
			}
			bodies = append(bodies, d.Body)
		}
	})
	return bodies, err
}

// TestConformanceBehindPgBouncer runs the suite over a quorum queue with
// the inbox reached through PgBouncer, in transaction pooling (pgx's
// cache_describe mode) and in session pooling (pgx's default mode): the
// crash tests SIGKILL consumer processes whose connections the pooler
// holds.
func TestConformanceBehindPgBouncer(t *testing.T) {
	amqptest.Require(t)
	for mode, url := range map[string]string{"transaction": testdb.RequirePgBouncer(t), "session": testdb.RequirePgBouncerSession(t)} {
		t.Run(mode, func(t *testing.T) {
			h := harness(true)
			h.Name += " behind PgBouncer (" + mode + " pooling)"
			h.DatabaseURL = url
			sourcetest.Run(t, h)
		})
	}
}
