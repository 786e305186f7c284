// Package jetstream is the NATS JetStream source of txinbox: a durable pull
// consumer whose deliveries are handed to a txinbox.Processor in batches
// and acked explicitly, one by one, only after the batch's database
// transaction committed.
//
//	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
//		Scope: "edi-invoicer",
//		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
//			_, err := tx.Exec(ctx, `INSERT INTO invoices ...`, m.Payload)
//			return err
//		},
//	})
//	if err != nil { ... }
//	c, err := jetstream.New(proc, jetstream.Config{
//		URL:      "nats://127.0.0.1:4222",
//		Stream:   "INVOICES",
//		Consumer: "edi-invoicer",
//	})
//	if err != nil { ... }
//	err = c.Run(ctx) // until ctx is done
//
// The inbox key is the Nats-Msg-Id header (the id JetStream also uses for
// publish deduplication) or, when a message has none, "stream/sequence".
// While a batch is in flight its messages are kept alive with InProgress,
// so that AckWait only has to cover a consumer that died. A Retry outcome
// is negatively acked with the processor's backoff as the redelivery
// delay; the message's delivery count (NumDelivered) is passed to the
// handler in the header "txinbox-delivery-count" and bounds the attempts:
// a message delivered more than MaxDeliveries times (a consumer that
// crashes on it never records a failure) is dead-lettered. See
// docs/sources.md; Ready and Lag (source.Readier, source.Lagger) answer a
// service's readiness and lag checks.
package jetstream
