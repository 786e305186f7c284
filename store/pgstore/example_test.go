package pgstore_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgstore"
)

// A batch handler that queues its one statement: it is sent with the
// batch's COMMIT, so a batch costs two round trips (BEGIN with the claim,
// then the statement with the COMMIT).
func ExampleQueue() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/billing")
	if err != nil {
		log.Fatal(err)
	}
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{
		Scope: "billing",
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			ids, bodies := make([]string, len(msgs)), make([][]byte, len(msgs))
			for i, m := range msgs {
				ids[i], bodies[i] = m.ID, m.Payload
			}
			return pgstore.Queue(tx, "INSERT INTO invoices (message_id, body) SELECT * FROM unnest($1::text[], $2::bytea[])", ids, bodies)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "inv-1", Payload: []byte(`{"amount":12}`)}}); err != nil {
		log.Fatal(err)
	}
}
