package amqp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// consumer connects to the broker and declares a fresh queue, or skips
// (fails under TXINBOX_REQUIRE_RABBITMQ=1 or CI=true) when no broker answers.
func consumer(t *testing.T) (*amqp091.Channel, string) {
	t.Helper()
	conn, err := amqp091.Dial(amqptest.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	q, err := ch.QueueDeclare("outbox-test-"+hex.EncodeToString(b), false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ch, q.Name
}

func TestSendConfirmsReturnsAndReconnects(t *testing.T) {
	ch, queue := consumer(t)
	tg, err := New(Config{URL: amqptest.URL(), RoutingKey: queue})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := &outbox.Message{ID: 1, Scope: "s", MessageID: "m", Part: 3, ContentType: "application/json",
		Headers: []outbox.Header{{Key: "h", Value: "v"}}, Payload: []byte(`{"a":1}`), CreatedAt: time.Now()}
	if _, err := tg.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	// Unroutable (mandatory): an error, retried by the relay.
	if _, err := tg.Send(ctx, &outbox.Message{ID: 2, Scope: "s", MessageID: "lost", Topic: "no-such-queue-" + queue}); err == nil ||
		outbox.IsPermanent(err) || !strings.Contains(err.Error(), "unroutable") {
		t.Errorf("unroutable: %v", err)
	}
	// The connection drops (a broker restart, say): the next send
	// reconnects.
	tg.mu.Lock()
	tg.conn.Close()
	tg.mu.Unlock()
	m2 := *m
	m2.MessageID = "m2"
	if _, err := tg.Send(ctx, &m2); err != nil {
		t.Fatalf("send after the connection closed: %v", err)
	}
	if _, err := tg.Send(ctx, &outbox.Message{ID: 3}); err != nil {
		t.Fatalf("default routing key: %v", err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []amqp091.Delivery
	for len(got) < 3 {
		select {
		case d := <-deliveries:
			got = append(got, d)
		case <-ctx.Done():
			t.Fatalf("got %d messages, want 3", len(got))
		}
	}
	d := got[0]
	if d.MessageId != "s/m/3" || d.ContentType != "application/json" || d.Headers["h"] != "v" || string(d.Body) != `{"a":1}` ||
		d.DeliveryMode != amqp091.Persistent || got[1].MessageId != "s/m2/3" || got[2].MessageId != "//0" {
		t.Errorf("deliveries: %+v / %s / %s", d, got[1].MessageId, got[2].MessageId)
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []Config{{}, {URL: "http://x"}, {URL: "amqp://x", Channels: -1}} {
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "Config.") {
			t.Errorf("New(%+v) = %v", c, err)
		}
	}
	tg, _ := New(Config{URL: "amqp://127.0.0.1:1/"})
	if _, err := tg.Send(context.Background(), &outbox.Message{ID: 1}); !outbox.IsPermanent(err) {
		t.Errorf("no routing key on the default exchange: %v, want permanent", err)
	}
}
