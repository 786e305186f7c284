package amqp_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/store/pgstore"
)

// Example consumes a quorum queue into a PostgreSQL inbox, with dead
// letters copied to an exchange. It needs a broker and a database, so it
// is compiled, not run.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db/app")
	if err != nil {
		log.Fatal(err)
	}
	driver, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
		Scope: "invoices",
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, `INSERT INTO partner_invoices (message_id, body) VALUES ($1, $2)`, m.ID, m.Payload)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := amqp.New(proc, amqp.Config{
		URL:   "amqp://guest:guest@rabbit:5672/",
		Queue: "invoices",
		Setup: func(ch *amqp091.Channel) error {
			_, err := ch.QueueDeclare("invoices", true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
			return err
		},
		DeadLetterExchange: "invoices.dlx",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
