// Package kafka is the Kafka source of txinbox: a consumer-group consumer
// (franz-go kgo) that hands each partition's polled records to a
// txinbox.Processor as one batch, in offset order, with partitions processed
// in parallel, and commits offsets to Kafka only after the batch's database
// transaction committed.
//
//	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{
//		Scope:   "edi-invoicer",
//		Ordered: true, // a failed record holds back its partition
//		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
//			_, err := tx.Exec(ctx, `INSERT INTO invoices ...`, m.Payload)
//			return err
//		},
//	})
//	if err != nil { ... }
//	c, err := kafka.New(proc, kafka.Config{
//		Seeds:  []string{"localhost:9092"},
//		Topics: []string{"invoices"},
//		Group:  "edi-invoicer",
//		Key:    kafka.HeaderKey("message-id"),
//	})
//	if err != nil { ... }
//	err = c.Run(ctx) // until ctx is done
//
// Each batch transaction also saves the partition's watermark (the offset
// of the last record of the longest prefix of acked outcomes) with
// txinbox.Processor.ProcessCheckpoint. On assignment a partition resumes
// from the later of the watermark+1 and Kafka's committed offset, so a lost
// offset commit costs no re-read. A Retry outcome pauses its partition for
// the Retry's backoff and rewinds it to the first record not acked; later
// records of the partition never commit before it (Ordered processing, one
// ordering key per partition), so the processor must be built with
// Ordered set. Ready, Lag and RedeliveryHorizons (source.Readier,
// source.Lagger, source.Horizoner) answer a service's readiness, lag and
// retention checks. See docs/kafka.md for the guarantees and the failure
// modes.
package kafka
