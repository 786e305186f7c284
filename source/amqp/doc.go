// Package amqp is the RabbitMQ (AMQP 0-9-1) source of txinbox: a consumer
// with manual acks whose deliveries are handed to a txinbox.Processor in
// batches and acked only after the batch's database transaction committed.
//
//	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
//		Scope: "invoices",
//		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
//			_, err := tx.Exec(ctx, `INSERT INTO invoices ...`, m.Payload)
//			return err
//		},
//	})
//	if err != nil { ... }
//	c, err := amqp.New(proc, amqp.Config{
//		URL:   "amqp://guest:guest@127.0.0.1:5672/",
//		Queue: "invoices",
//	})
//	if err != nil { ... }
//	err = c.Run(ctx) // until ctx is done
//
// The inbox key is the message_id property by default (HeaderKey keys on a
// header instead). A message without one is dead-lettered with the reason
// "no message id" unless Config.ContentKey derives a key from the message
// itself. The prefetch count follows the batch size, and a batch whose
// messages may all be acked is acked with one multiple-ack. A Retry outcome
// is held unacked for the processor's backoff, then nacked with requeue
// (RabbitMQ has no delayed requeue). The delivery count comes from the
// x-delivery-count header on quorum queues and from the redelivered flag
// on classic queues (1, or at least 2); it is passed to the handler in the
// header "txinbox-delivery-count" and bounds the attempts (MaxDeliveries).
// A lost connection or channel is dialed again with backoff; the broker
// requeues what was not acked, and the inbox finds what had committed. See
// docs/sources.md; Ready and Lag (source.Readier, source.Lagger) answer a
// service's readiness and lag checks.
package amqp
