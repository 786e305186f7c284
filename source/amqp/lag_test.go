package amqp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/amqp"
)

// TestLagAndReady reads a real queue's ready messages: before Run over a
// connection dialed for the reading, while Run consumes over a kept one.
// A queue that does not exist is an error that leaves the consumer's
// readings usable. Ready follows the consuming session.
func TestLagAndReady(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	var ps []amqp091.Publishing
	for i := range 3 {
		ps = append(ps, amqp091.Publishing{MessageId: fmt.Sprint("m", i), Body: []byte("x")})
	}
	f.publish(ps...)
	cfg := f.config()
	c, err := newConsumer(t, f.driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Ready(ctx); err == nil || err.Error() != "not connected" {
		t.Errorf("Ready before Run = %v, want not connected", err)
	}
	waitLag(t, c, 3)
	missingCfg := cfg
	missingCfg.Queue += "-missing"
	missing, err := newConsumer(t, f.driver, missingCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Lag(ctx); err == nil {
		t.Fatal("the depth of a missing queue read without an error")
	}
	waitLag(t, c, 3)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitLag(t, c, 0)
	deadline := time.Now().Add(10 * time.Second)
	for c.Ready(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Ready while Run consumes = %v", c.Ready(ctx))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLag polls c's lag until it is want (publishes and acks reach the
// broker's count asynchronously), for up to 10 seconds.
func waitLag(t *testing.T, c *amqp.Consumer, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lags, err := c.Lag(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(lags) == 1 && lags[0] == (source.Lag{Messages: want}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag = %v, want %d ready messages", lags, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
