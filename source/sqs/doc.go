// Package sqs is the Amazon SQS source of txinbox: long-polling receivers
// hand batches of messages to a txinbox.Processor, and the messages are
// deleted from the queue (DeleteMessageBatch) only after the batch's
// database transaction committed.
//
//	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
//		Scope: "edi-invoicer",
//		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
//			_, err := tx.Exec(ctx, `INSERT INTO invoices ...`, m.Payload)
//			return err
//		},
//	})
//	if err != nil { ... }
//	c, err := sqs.New(proc, sqs.Config{
//		Client:   awssqs.NewFromConfig(awsCfg),
//		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/invoices",
//	})
//	if err != nil { ... }
//	err = c.Run(ctx) // until ctx is done
//
// The inbox key is the SQS MessageId by default (it catches redeliveries,
// not a producer's re-send); AttributeKey keys on a message attribute set
// by the producer and DeduplicationIDKey on a FIFO queue's
// MessageDeduplicationId. While a batch is in flight the source extends
// its messages' visibility timeout, so that the timeout only has to cover
// a consumer that died. A Retry outcome sets the message's visibility
// timeout to the processor's backoff. ApproximateReceiveCount is passed to
// the handler in the header "txinbox-receive-count" and bounds the
// attempts: a message received more than MaxDeliveries times (a consumer
// that crashes on it never records a failure) is dead-lettered. See
// docs/sources.md; Ready, Lag and RedeliveryHorizons (source.Readier,
// source.Lagger, source.Horizoner) answer a service's readiness, lag and
// retention checks from the queue's attributes.
package sqs
