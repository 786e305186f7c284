package jetstream_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// Example consumes a stream of an embedded nats-server into a SQLite
// inbox. The producer published one event twice (a replay, hours later:
// JetStream deduplicates Nats-Msg-Id for two minutes only). Keyed on the
// event id in its "message-id" header, the side effect runs once and both
// messages are acked.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "txinbox-nats-example-")
	defer os.RemoveAll(dir)
	driver, err := sqlitestore.Open(filepath.Join(dir, "inbox.db"), sqlitestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer driver.Close()
	if err := driver.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := driver.DB().Exec(`CREATE TABLE partner_invoices (message_id TEXT, body TEXT)`); err != nil {
		log.Fatal(err)
	}

	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		log.Fatal(err)
	}
	go srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)
	publish(ctx, srv.ClientURL())

	proc, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope: "edi-invoicer",
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO partner_invoices VALUES (?, ?)`, m.ID, string(m.Payload))
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := jetstream.New(proc, jetstream.Config{
		URL: srv.ClientURL(), Stream: "INVOICES", Consumer: "edi-invoicer", Key: jetstream.HeaderKey("message-id"),
	})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.Stats().Acked < 2 {
		<-tick.C
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	var effects int
	driver.DB().QueryRow(`SELECT count(*) FROM partner_invoices`).Scan(&effects) //nolint:errcheck // example
	s := c.Stats()
	fmt.Printf("effects %d, processed %d, duplicates %d, acked %d\n", effects, s.Processed, s.Duplicates, s.Acked)
	// Output: effects 1, processed 1, duplicates 1, acked 2
}

// publish creates the stream and publishes the event twice.
func publish(ctx context.Context, url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "INVOICES", Subjects: []string{"invoices.>"}}); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		m := nats.NewMsg("invoices.partner-1")
		m.Header.Set("message-id", "InvoiceIssued/INV-1")
		m.Data = []byte(`{"invoice":"INV-1"}`)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			log.Fatal(err)
		}
	}
}
