package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// TestRun runs the example against an embedded NATS server: an event
// published twice with one Nats-Msg-Id (the second time after the
// stream's own deduplication window) is one invoice row, and both
// messages are acked.
func TestRun(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "INVOICES", Subjects: []string{"invoices.>"},
		Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	publish := func() *natsjs.PubAck {
		msg := &nats.Msg{Subject: "invoices.acme", Data: []byte("INV-1"), Header: nats.Header{}}
		msg.Header.Set(natsjs.MsgIDHeader, "INV-1")
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	publish()
	// Re-sent after the stream's own deduplication window, which the
	// server clears on a timer: until then the re-send is taken for a
	// duplicate and not stored, so it is sent again.
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(150 * time.Millisecond)
		if !publish().Duplicate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream still took the re-send for a duplicate after 10s")
		}
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-url", srv.ClientURL(), "-db", filepath.Join(t.TempDir(), "inbox.db")}, &out)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cons, err := js.Consumer(ctx, "INVOICES", "invoicer")
		if err == nil {
			if info, err := cons.Info(ctx); err == nil && info.AckFloor.Stream == 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the two messages were not acked within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "processed 1, duplicates 1, dead-lettered 0, acked 2") {
		t.Errorf("output %q", out.String())
	}
}
