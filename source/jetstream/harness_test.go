package jetstream_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/sourcetest"
)

// natsAddr is the embedded server of the test process (parent only).
var natsAddr string

func TestMain(m *testing.M) {
	sourcetest.RunChild(harness)
	dir, err := os.MkdirTemp("", "txinbox-nats-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := startServer(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the embedded nats-server:", err)
		os.Exit(1)
	}
	natsAddr = srv.Addr().String()
	code := m.Run()
	srv.Shutdown()
	srv.WaitForShutdown()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startServer starts an embedded JetStream server on a random loopback
// port, storing in dir.
func startServer(dir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return nil, fmt.Errorf("not ready in 10s")
	}
	return srv, nil
}

var harness = sourcetest.Harness{
	Name: "NATS JetStream",
	Features: sourcetest.Features{Ordering: true, ConsumerGroups: true, Redelivery: true, DeadLetterDestination: true,
		NULInIDs: true, InvalidUTF8InIDs: true, LongIDs: true, BinaryHeaders: true},
	New:  newBroker,
	Open: openBroker,
}

func TestConformance(t *testing.T) {
	sourcetest.Run(t, harness)
}

// TestConformancePgDBStore runs the suite with the inbox on pgdbstore
// (database/sql on pgx's stdlib).
func TestConformancePgDBStore(t *testing.T) {
	h := harness
	h.Name += " on pgdbstore"
	h.Store = sourcetest.PgDBStore
	sourcetest.Run(t, h)
}

// TestConformanceMariaDB runs the suite, hostile, outage and SIGKILL
// parts included, with the inbox on MariaDB (store/mysqlstore, a database
// per test on TXINBOX_MYSQL_URL; a missing server fails the test under
// TXINBOX_REQUIRE_MYSQL=1 or CI=true).
func TestConformanceMariaDB(t *testing.T) {
	h := harness
	h.Name += " on MariaDB"
	h.Store = sourcetest.MySQLStore
	sourcetest.Run(t, h)
}

// broker is one stream of the embedded server; consumers connect through a
// proxy that Interrupt cuts.
type broker struct {
	URL      string `json:"url"` // the consumers' URL (the proxy)
	Direct   string `json:"direct"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	proxy    *sourcetest.Proxy
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func newBroker(t *testing.T) (sourcetest.Broker, string) {
	t.Helper()
	name := randomName("S")
	b := &broker{Direct: natsAddr, Stream: name, Consumer: "sourcetest"}
	b.proxy = sourcetest.NewProxy(t, natsAddr)
	b.URL = "nats://" + b.proxy.Addr()
	nc, js := b.connect(t)
	defer nc.Close()
	_, err := js.CreateStream(context.Background(), natsjs.StreamConfig{Name: name, Subjects: []string{name + ".>"},
		Duplicates: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := json.Marshal(b) // strings only
	return b, string(desc)
}

func openBroker(_ context.Context, desc string) (sourcetest.Broker, error) {
	b := &broker{}
	return b, json.Unmarshal([]byte(desc), b)
}

// connect opens a direct connection for publishing and inspecting.
func (b *broker) connect(t testing.TB) (*nats.Conn, natsjs.JetStream) {
	nc, err := nats.Connect("nats://" + b.Direct)
	if err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func (b *broker) Publish(ctx context.Context, msgs ...sourcetest.Message) error {
	nc, err := nats.Connect("nats://" + b.Direct)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		out := nats.NewMsg(b.Stream + ".invoices")
		out.Data = m.Body
		if m.ID != "" {
			out.Header.Set(jetstream.MsgIDHeader, m.ID)
		}
		for _, h := range m.Headers {
			out.Header.Add(h.Key, h.Value)
		}
		if _, err := js.PublishMsg(ctx, out); err != nil {
			return err
		}
	}
	return nil
}

// Consume keys on the Nats-Msg-Id header only, so that a message without
// it is dead-lettered as the suite expects.
func (b *broker) Consume(ctx context.Context, inbox sourcetest.Inbox) error {
	proc, err := inbox.Processor()
	if err != nil {
		return err
	}
	c, err := jetstream.New(proc, jetstream.Config{
		URL: b.URL, Stream: b.Stream, Consumer: b.Consumer, FilterSubjects: []string{b.Stream + ".invoices"},
		Options:           []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
		Key:               jetstream.HeaderKey(jetstream.MsgIDHeader),
		AckWait:           2 * time.Second,
		DeadLetterSubject: b.Stream + ".dead",
		ErrorBackoff:      func(int) time.Duration { return 100 * time.Millisecond },
		Logger:            inbox.Logger,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func (b *broker) Pending(ctx context.Context) (int, error) {
	nc, err := nats.Connect("nats://" + b.Direct)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return 0, err
	}
	cons, err := js.Consumer(ctx, b.Stream, b.Consumer)
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

func (b *broker) Interrupt() { b.proxy.Cut() }

func (b *broker) DeadLetters(ctx context.Context) ([][]byte, error) {
	nc, err := nats.Connect("nats://" + b.Direct)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, err
	}
	cons, err := js.OrderedConsumer(ctx, b.Stream, natsjs.OrderedConsumerConfig{FilterSubjects: []string{b.Stream + ".dead"}})
	if err != nil {
		return nil, err
	}
	batch, err := cons.Fetch(100, natsjs.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	var bodies [][]byte
	for m := range batch.Messages() {
		bodies = append(bodies, m.Data())
	}
	return bodies, batch.Error()
}
