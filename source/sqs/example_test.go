package sqs_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/source/sqs/sqsfake"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// Example consumes a queue (here the in-repo fake) into a SQLite inbox. The
// producer sent one event twice; keyed on its "message-id" attribute, the
// side effect runs once and both messages are deleted.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "txinbox-sqs-example-")
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

	fake := sqsfake.NewServer()
	defer fake.Close()
	client := awssqs.New(awssqs.Options{BaseEndpoint: aws.String(fake.URL()), Region: "us-east-1", Credentials: sqsfake.Credentials})
	q, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String("invoices")})
	if err != nil {
		log.Fatal(err)
	}
	for range 2 { // the producer re-sends the event
		if _, err := client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(`{"invoice":"INV-1"}`),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"message-id": {DataType: aws.String("String"), StringValue: aws.String("InvoiceIssued/INV-1")}}}); err != nil {
			log.Fatal(err)
		}
	}

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
	c, err := sqs.New(proc, sqs.Config{Client: client, QueueURL: *q.QueueUrl, Key: sqs.AttributeKey("message-id")})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.Stats().Deleted < 2 { // both copies deleted from the queue
		<-tick.C
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	var effects int
	driver.DB().QueryRow(`SELECT count(*) FROM partner_invoices`).Scan(&effects) //nolint:errcheck // example
	s := c.Stats()
	fmt.Printf("effects %d, processed %d, duplicates %d, deleted %d\n", effects, s.Processed, s.Duplicates, s.Deleted)
	// Output: effects 1, processed 1, duplicates 1, deleted 2
}
