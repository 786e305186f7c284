package jetstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/sourcetest"
)

// TestLagAndReady: a consumer without Config.Conn is ready only while Run
// is connected; one given a connection is ready while it is, and reads
// the durable consumer's messages not yet acked as its lag. The two
// messages published after Run stopped may be handed to Run's last pull
// request, which the server keeps until it expires: they are unacked,
// not pending, and still lag (NumPending alone read 0 here under load).
// Acks reach the consumer asynchronously, so the lag is awaited.
func TestLagAndReady(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	ctx := context.Background()
	publish := func(ids ...string) {
		for _, id := range ids {
			if err := f.b.Publish(ctx, sourcetest.Message{ID: id, Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish("a", "b", "c")
	idle, err := newConsumer(t, f.driver, f.config(insertEffect))
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Ready(ctx); err == nil || err.Error() != "not running" {
		t.Errorf("Ready of a consumer not running = %v, want not running", err)
	}
	nc, err := nats.Connect("nats://" + f.b.Direct)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cfg := f.config(insertEffect)
	cfg.URL, cfg.Conn = "", nc
	c, err := newConsumer(t, f.driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready over an open connection = %v", err)
	}
	runtest.Until(t, c.Stats, func(s jetstream.Stats) bool { return s.Acked == 3 }, c.Run)
	publish("d", "e")
	var lags []source.Lag
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lags, err = c.Lag(ctx)
		if err == nil && len(lags) == 1 && lags[0] == (source.Lag{Messages: 2}) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(lags) != 1 || lags[0] != (source.Lag{Messages: 2}) {
		t.Errorf("Lag = %v, %v after 10s; want the 2 messages published after the consumer stopped", lags, err)
	}
	nc.Close()
	if err := c.Ready(ctx); err == nil {
		t.Error("a consumer whose connection closed is ready")
	}
}
