/*
Package txinbox gives consumers of at-least-once brokers exactly-once
business effects: the Transactional Inbox.

Every broker (Kafka, RabbitMQ, SQS, NATS, AS4) delivers a message again after
a crash or an ack timeout. txinbox inserts the message's (scope, id) into an
inbox table with a unique key in the same database transaction as the
message's side effect. A redelivery finds the key and is skipped; the broker
is acked only after the commit. A key exists in the inbox only if its
business transaction committed, so a failure never turns the redelivery into
a "duplicate".

# Processing

A Processor runs a handler for each new message inside the inbox's own
transaction, typed to the store's transaction: pgx.Tx with store/pgstore,
*sql.Tx with store/sqlitestore.

	p, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
		Scope: "edi-invoicer",
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, "INSERT INTO partner_invoices (message_id, body) VALUES ($1, $2)", m.ID, m.Payload)
			return err
		},
	})
	results, err := p.Process(ctx, msgs) // one transaction per batch
	// ack msgs[i] only if err == nil (or results[i].Outcome != 0) and results[i].Outcome.Ack()

Each message comes to one Outcome: Processed, Duplicate (same id, same
payload SHA-256), Drift (same id, another payload: recorded, not run), Retry
(the handler failed: nothing committed, not acked) or DeadLettered (too many
attempts, a Permanent error, or no id: stored with its last error, acked).

# Batches

Process claims a whole batch with one INSERT ... ON CONFLICT DO NOTHING and
runs the handlers without savepoints. Only when a handler fails is the batch
rolled back and redone with a savepoint per message, so one failing message
rolls back only its own work. A BatchHandler receives all new messages of a
batch at once, for one multi-row statement. Submit groups concurrent single
messages into batches (Config.Linger, Config.MaxBatchSize). The same id twice
in one batch runs once; the later copy is a Duplicate (or Drift).

# Concurrency

A second delivery of an id whose first delivery is still in flight, in this
process or another, waits on the unique index; it then sees Duplicate if the
first committed, or runs if the first rolled back.

# Hooks

Metrics and tracing plug in through small interfaces (OutcomeHook,
BatchHook, BatchStartHook, AckHook) in Config.Hooks; logging goes to
Config.Logger. Sources report their acknowledgements to the broker through
Processor.ReportAck.
*/
package txinbox
