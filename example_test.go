package txinbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// Example processes an InvoiceIssued event twice, as a broker would after a
// crash: the side effect runs once.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "txinbox-example-")
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

	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope: "edi-invoicer",
		// The side effect runs in the inbox's own transaction.
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO partner_invoices VALUES (?, ?)`, m.ID, string(m.Payload))
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	event := &txinbox.Message{ID: "InvoiceIssued/42", Source: "invoices", Payload: []byte(`{"invoice":"INV-42"}`)}
	for range 2 { // the second delivery is the broker's redelivery
		res, err := p.Process(ctx, []*txinbox.Message{event})
		if err != nil {
			log.Fatal(err) // nothing committed: do not ack
		}
		fmt.Println(res[0].Outcome, "ack:", res[0].Outcome.Ack())
	}
	var n int
	driver.DB().QueryRow(`SELECT count(*) FROM partner_invoices`).Scan(&n)
	fmt.Println("invoices sent:", n)
	// Output:
	// processed ack: true
	// duplicate ack: true
	// invoices sent: 1
}

// ExampleProcessor_Process_drift shows the same id arriving with another
// payload: the side effect does not run and the attempt is recorded.
func ExampleProcessor_Process_drift() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "txinbox-example-")
	defer os.RemoveAll(dir)
	driver, _ := sqlitestore.Open(filepath.Join(dir, "inbox.db"), sqlitestore.Options{})
	defer driver.Close()
	driver.Migrate(ctx)

	p, _ := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope:   "edi-invoicer",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil },
	})
	res, _ := p.Process(ctx, []*txinbox.Message{
		{ID: "UNB/5000000000000/0001", Payload: []byte("MOA+77:100'")},
		{ID: "UNB/5000000000000/0001", Payload: []byte("MOA+77:999'")}, // same id, other amount
	})
	fmt.Println(res[0].Outcome, res[1].Outcome)
	s, _ := driver.Stats(ctx)
	fmt.Println("drift records:", s.Drift)
	// Output:
	// processed drift
	// drift records: 1
}
