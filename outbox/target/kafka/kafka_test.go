package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/target/kafka"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSendProducesWithKeyAndHeaders(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "fallback"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tg, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs(), Topic: "fallback"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := []*outbox.Message{
		{ID: 1, Scope: "s", MessageID: "m1", Topic: "orders", Key: "acct-1", Headers: []outbox.Header{{Key: "h", Value: "v"}}, Payload: []byte("one")},
		{ID: 2, Scope: "s", MessageID: "m2", Payload: []byte("two")},
	}
	for _, m := range msgs {
		rc, err := tg.Send(ctx, m)
		if err != nil || !strings.Contains(string(rc), "/0@") {
			t.Fatalf("Send(%d) = %q, %v", m.ID, rc, err)
		}
	}
	if _, err := kafka.NewFromClient(nil, "").Send(ctx, &outbox.Message{ID: 3}); !outbox.IsPermanent(err) {
		t.Errorf("a row without a topic: %v, want a permanent error", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("orders", "fallback"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]*kgo.Record{}
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r })
	}
	hdr := func(r *kgo.Record) map[string]string {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		return h
	}
	one, two := got["one"], got["two"]
	if one.Topic != "orders" || string(one.Key) != "acct-1" || hdr(one)["h"] != "v" || hdr(one)[kafka.HeaderID] != "s/m1/0" {
		t.Errorf("record one: topic %s key %q headers %v", one.Topic, one.Key, hdr(one))
	}
	if two.Topic != "fallback" || two.Key != nil || hdr(two)[kafka.HeaderID] != "s/m2/0" {
		t.Errorf("record two: topic %s key %q headers %v", two.Topic, two.Key, hdr(two))
	}
}

func TestNewNeedsBrokers(t *testing.T) {
	if _, err := kafka.New(kafka.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Brokers") {
		t.Errorf("New without brokers: %v", err)
	}
}
