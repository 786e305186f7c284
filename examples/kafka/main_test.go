package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/kafkatest"
)

// TestRun runs the example against an in-process Kafka cluster (kfake): a
// record produced twice with one message-id is one invoice row, and the
// group's offsets reach the end of the topic.
func TestRun(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "invoices"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 2 {
		r := &kgo.Record{Topic: "invoices", Value: []byte("INV-1"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("INV-1")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-brokers", strings.Join(cluster.ListenAddrs(), ","), "-db", filepath.Join(t.TempDir(), "inbox.db")}, &out)
	}()
	adm := kadm.NewClient(cl)
	kafkatest.AwaitOffset(t, adm, "invoicer", "invoices", 0, 2, done)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "processed 1, duplicates 1, dead-lettered 0") {
		t.Errorf("output %q", out.String())
	}
}
