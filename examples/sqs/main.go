// Command sqs consumes an SQS queue into a SQLite inbox: each message's
// side effect (a row of the invoices table) commits once, in the
// transaction that records its id, and the message is deleted from the
// queue only after that commit. A producer's re-send with the same
// "message-id" attribute is a duplicate. Ctrl-C stops it.
//
//	go run ./examples/sqs -queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/invoices
//
// Credentials and region come from the AWS SDK's default chain
// (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role, AWS_REGION);
// -endpoint points it at another SQS-compatible server.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqs example:", err)
		os.Exit(1)
	}
}

// run consumes until ctx is done, then prints what the consumer did.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sqs", flag.ContinueOnError)
	queueURL := fs.String("queue-url", os.Getenv("SQS_QUEUE_URL"), "queue consumed (default $SQS_QUEUE_URL)")
	endpoint := fs.String("endpoint", "", "SQS endpoint URL (default: the region's)")
	dbPath := fs.String("db", "inbox.db", "SQLite file of the inbox and the invoices table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *queueURL == "" {
		return errors.New("-queue-url is required")
	}
	client, err := newClient(ctx, *endpoint)
	if err != nil {
		return err
	}
	driver, err := openInbox(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer driver.Close()
	proc, err := newProcessor(driver, "invoices")
	if err != nil {
		return err
	}
	// The source: it hands the processor batches and deletes what committed.
	c, err := sqs.New(proc, sqs.Config{Client: client, QueueURL: *queueURL, Key: sqs.AttributeKey("message-id")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consuming %s into %s; Ctrl-C stops\n", *queueURL, *dbPath)
	if err := c.Run(ctx); err != nil {
		return err
	}
	s := c.Stats()
	fmt.Fprintf(out, "processed %d, duplicates %d, dead-lettered %d, deleted %d\n", s.Processed, s.Duplicates, s.DeadLettered, s.Deleted)
	return nil
}

// openInbox opens the SQLite inbox at path, migrated, with the invoices
// table the handler writes.
func openInbox(ctx context.Context, path string) (*sqlitestore.Driver, error) {
	driver, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	if err = driver.Migrate(ctx); err == nil {
		_, err = driver.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS invoices (message_id TEXT PRIMARY KEY, body TEXT)`)
	}
	if err != nil {
		driver.Close()
		return nil, err
	}
	return driver, nil
}

// newProcessor builds the processor: the inbox scope and the side effect,
// run in the inbox's own transaction.
func newProcessor(driver *sqlitestore.Driver, scope string) (*txinbox.Processor[*sql.Tx], error) {
	return txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope: scope,
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO invoices VALUES (?, ?)`, m.ID, string(m.Payload))
			return err
		},
	})
}

// newClient is an SQS client configured by the AWS SDK's default chain,
// at endpoint unless it is empty.
func newClient(ctx context.Context, endpoint string) (*awssqs.Client, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return awssqs.NewFromConfig(awsCfg, func(o *awssqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}
