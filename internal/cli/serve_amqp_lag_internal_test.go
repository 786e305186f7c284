package cli

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// TestAMQPDepth reads a real queue's ready messages; a queue that does not
// exist is an error that leaves the connection usable for the next reading.
func TestAMQPDepth(t *testing.T) {
	url := os.Getenv("TXINBOX_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
	if err != nil {
		if os.Getenv("TXINBOX_REQUIRE_RABBITMQ") == "1" {
			t.Fatal(err)
		}
		t.Skip("RabbitMQ not reachable (set TXINBOX_AMQP_URL or run .ci/start-rabbitmq): ", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	queue := fmt.Sprintf("txinbox-depth-%d", time.Now().UnixNano())
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := ch.PublishWithContext(ctx, "", queue, false, false, amqp091.Publishing{Body: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	d := &amqpDepth{url: url, queue: queue}
	defer d.close()
	// Publishes are asynchronous: wait for the broker's count.
	deadline := time.Now().Add(10 * time.Second)
	for {
		lags, err := d.lag(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lags[""] == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag = %v, want 3 ready messages", lags)
		}
		time.Sleep(20 * time.Millisecond)
	}
	missing := &amqpDepth{url: url, queue: queue + "-missing"}
	defer missing.close()
	if _, err := missing.lag(ctx); err == nil {
		t.Fatal("the depth of a missing queue read without an error")
	}
	missing.queue = queue
	if lags, err := missing.lag(ctx); err != nil || lags[""] != 3 {
		t.Errorf("after a missing queue: %v, %v; want 3 on the same connection", lags, err)
	}
}
