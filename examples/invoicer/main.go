// Command invoicer runs the seed's EDI invoicer in one process: an embedded
// Kafka (kfake) with InvoiceIssued events (some published twice), the
// txinbox Kafka source feeding the invoicer's inbox handler (UNB reference,
// INVOIC, partner_invoices row and outbox row in one transaction), the
// outbox relay sending each row with the AS4 target, and a second AS4
// endpoint playing the partner, with its own inbox. Run it with
//
//	go run ./examples/invoicer
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/invoicer"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	as4target "github.com/txinbox/txinbox/outbox/target/as4"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

const invoices = 50

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	dir, err := os.MkdirTemp("", "invoicer-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The partner: an AS4 endpoint with its own inbox; its effect records
	// the UNB control reference of each INVOIC it receives.
	partnerDB, err := openSQLite(ctx, filepath.Join(dir, "partner.db"))
	if err != nil {
		return err
	}
	defer partnerDB.Close()
	if _, err := partnerDB.DB().ExecContext(ctx, `CREATE TABLE received_invoic (message_id TEXT NOT NULL, unb_ref TEXT NOT NULL)`); err != nil {
		return err
	}
	as4Store, err := as4sqlite.New(partnerDB.DB(), as4sqlite.Options{})
	if err == nil {
		err = as4Store.Migrate(ctx)
	}
	if err != nil {
		return err
	}
	endpoint, err := as4.New(partnerDB, as4.Config[*sql.Tx]{Store: as4Store, Inbox: txinbox.Config[*sql.Tx]{Logger: quiet},
		Deliver: func(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
			ics, err := edifact.Parse(bytes.NewReader(m.Parts[0].Data))
			if err != nil {
				return txinbox.Permanent(err)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO received_invoic VALUES ($1, $2)`, m.UserMessage.MessageID, ics[0].ControlRef)
			return err
		}})
	if err != nil {
		return err
	}
	defer endpoint.Close()
	partner := httptest.NewServer(endpoint)
	defer partner.Close()

	// The sender: inbox, invoicer tables and outbox in one SQLite file.
	senderDB, err := openSQLite(ctx, filepath.Join(dir, "sender.db"))
	if err != nil {
		return err
	}
	defer senderDB.Close()
	if err := invoicer.MigrateSQLite(ctx, senderDB.DB()); err != nil {
		return err
	}
	ob := outboxlite.New(senderDB)
	handler, err := invoicer.SQLite(ob, invoicer.Config{Sender: edifact.Party{ID: "5790000000004", Qualifier: "14"},
		Partners: map[string]edifact.Party{"ACME": {ID: "5790000000011", Qualifier: "14"}}})
	if err != nil {
		return err
	}

	// Kafka: the events, every fifth one published twice.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return err
	}
	defer cluster.Close()
	if err := publish(ctx, cluster.ListenAddrs()); err != nil {
		return err
	}
	proc, err := txinbox.NewProcessor(senderDB, txinbox.Config[*sql.Tx]{Scope: invoicer.DefaultScope, Handler: handler,
		Ordered: true, Logger: quiet})
	if err != nil {
		return err
	}
	consumer, err := kafka.New(proc, kafka.Config{Seeds: cluster.ListenAddrs(), Topics: []string{"invoices"},
		Group: invoicer.DefaultScope, Key: kafka.HeaderKey("message-id"), Logger: quiet})
	if err != nil {
		return err
	}

	// The relay: outbox rows to the partner over AS4.
	party := func(id string) ebms.Party {
		return ebms.Party{IDs: []ebms.PartyID{{Type: "urn:oasis:names:tc:ebcore:partyid-type:unregistered", ID: id}}}
	}
	target, err := as4target.New(as4target.Config{MessageIDDomain: "invoicer.example", Partners: map[string]as4target.Partner{
		"ACME": {URL: partner.URL, From: party("us"), To: party("ACME"), Service: "urn:example:invoicing", Action: "INVOIC"}}})
	if err != nil {
		return err
	}
	relay, err := outbox.New(ob, outbox.Config{Target: target, PollInterval: 50 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go consumer.Run(runCtx) //nolint:errcheck // stopped below
	go relay.Run(runCtx)    //nolint:errcheck // stopped below
	for {
		var received, refs int
		err := partnerDB.DB().QueryRowContext(ctx, `SELECT count(*), count(DISTINCT unb_ref) FROM received_invoic`).Scan(&received, &refs)
		if err != nil {
			return err
		}
		if received == invoices {
			fmt.Printf("%d invoices (%d events published): %d INVOICs at the partner, %d distinct UNB control references\n",
				invoices, invoices+invoices/5, received, refs)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d INVOICs delivered: %w", received, invoices, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func openSQLite(ctx context.Context, path string) (*sqlitestore.Driver, error) {
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func publish(ctx context.Context, seeds []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "invoices"); err != nil {
		return err
	}
	var recs []*kgo.Record
	for i := range invoices {
		ev := invoicer.InvoiceIssued{Type: invoicer.EventType, InvoiceID: fmt.Sprintf("INV-%04d", i+1), Partner: "ACME",
			IssuedAt: time.Now().UTC(), Lines: []invoicer.Line{{SKU: "SKU-1", Quantity: int64(i + 1), UnitPriceCents: 1250}}}
		b, _ := json.Marshal(ev)
		rec := &kgo.Record{Topic: "invoices", Value: b, Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(ev.InvoiceID)}}}
		recs = append(recs, rec)
		if i%5 == 0 {
			again := *rec // an at-least-once producer's re-send: a new record
			recs = append(recs, &again)
		}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}
