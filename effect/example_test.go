package effect_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// A Go program with serve's --effect sql: each new message runs the
// statement, with the parameters of effect.Params, in its inbox
// transaction; a duplicate runs nothing. On an unpartitioned PostgreSQL
// inbox (pgstore), statements that read new_messages instead run once per
// batch in the claim's statement.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "effect-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := sqlitestore.Open(filepath.Join(dir, "inbox.db"), sqlitestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE invoices (message_id text, source text, body blob)"); err != nil {
		log.Fatal(err)
	}

	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.SQL,
		Statements: []string{"INSERT INTO invoices (message_id, source, body) VALUES ($2, $4, $9)"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := eff.Check(ctx); err != nil { // a typo fails here, not at every message
		log.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, eff.Apply(txinbox.Config[*sql.Tx]{Scope: "billing"}, "kafka"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	res, err := p.Process(ctx, []*txinbox.Message{{ID: "inv-1", Payload: []byte("12.50")}, {ID: "inv-1", Payload: []byte("12.50")}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Outcome, res[1].Outcome)
	var id, source, body string
	if err := d.DB().QueryRowContext(ctx, "SELECT message_id, source, body FROM invoices").Scan(&id, &source, &body); err != nil {
		log.Fatal(err)
	}
	fmt.Println(id, source, body)
	// Output:
	// processed duplicate
	// inv-1 kafka 12.50
}
