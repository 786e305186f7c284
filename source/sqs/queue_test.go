package sqs_test

import (
	"context"
	"testing"
	"time"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/sqs"
)

// TestQueueAttributes: the consumer reads its lag (visible messages) and
// redelivery horizon (MessageRetentionPeriod) from the queue, and is
// ready while the queue answers.
func TestQueueAttributes(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	for range 3 {
		f.send("x")
	}
	c, err := sqs.New(runtest.ConfigProcessor(t), f.config(insertEffect).Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if lags, err := c.Lag(ctx); err != nil || len(lags) != 1 || lags[0] != (source.Lag{Messages: 3}) {
		t.Errorf("Lag = %v, %v; want 3 messages", lags, err)
	}
	want := source.Horizon{What: "SQS queue " + f.queueURL, Figure: "MessageRetentionPeriod=345600 (4d)", Within: 96 * time.Hour}
	if hs, err := c.RedeliveryHorizons(ctx); err != nil || len(hs) != 1 || hs[0] != want {
		t.Errorf("RedeliveryHorizons = %+v, %v; want %+v", hs, err, want)
	}
	cfg := f.config(insertEffect).Config
	cfg.QueueURL += "-missing"
	missing, err := sqs.New(runtest.ConfigProcessor(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := missing.Ready(ctx); err == nil {
		t.Error("a consumer of a missing queue is ready")
	}
	if _, err := missing.RedeliveryHorizons(ctx); err == nil {
		t.Error("the horizon of a missing queue read without an error")
	}
}
