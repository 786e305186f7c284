// Package store is the storage seam of txinbox: the small interface that the
// processor calls and that each database driver (pgstore, pgdbstore,
// mysqlstore, sqlitestore) implements, generic over the driver's own
// transaction type.
//
// The package depends on nothing else of txinbox, so drivers never import the
// core and the core never imports a driver. Rows here are plain data; the
// processor turns its Messages into them.
//
// # Optional capabilities
//
// A store must implement [Driver] and [Tx]; that is enough to process
// messages with handlers. Everything else is one small optional interface,
// which the processor (or the service, the console, the purger) finds by
// type assertion on the Driver or on a Tx. Each of them, what a store gains
// by implementing it, and what happens without it:
//
//   - [Refuser] (Driver): a batch the database refuses at COMMIT (a
//     deferred constraint, a trigger, a value refused) is split until the
//     message at fault fails alone and the others commit. Without it, such
//     a failure fails the whole batch, which is redelivered whole (and
//     fails again while the message at fault is in it).
//   - [Pinger] (Driver): a handler whose connection the server closed while
//     the database answers (pg_terminate_backend, a crashing statement) is
//     run again alone and blamed if it loses it again. Without it, every
//     lost connection is taken for an outage and no message is blamed.
//   - [EffectReader] (Driver): a declarative effect whose statements do not
//     read the messages' payload or headers leaves the headers unencoded, so
//     a header that cannot be encoded fails nothing. Without it, the headers
//     are encoded whenever Effect.Headers is set.
//   - [EffectCommitter] (Driver): a batch of a declarative effect is one
//     autocommitted statement (the claim, the effect and the checkpoint in
//     one round trip, no BEGIN or COMMIT). Without it, each batch runs in a
//     transaction, through [EffectClaimer].
//   - [Admin] (Driver): migrations, counts, listing and inspecting drift and
//     dead letters, forget and drop: what txinbox's CLI, the service and the
//     console need of an inbox. Without it, the store processes messages but
//     cannot be operated through txinbox (console.Config requires it).
//   - [Purger] (Driver): expired rows are deleted in short bounded batches,
//     one purger at a time across processes (package purge, the service's
//     retention). Without it, nothing is purged: rows stay until deleted by
//     hand.
//   - [GaugeReader] (Driver): the inbox's size and expired rows feed the
//     Prometheus gauges on every scrape, read through indexes and estimates
//     (metrics/prom.NewInboxCollector, server.Config.Gauges). Without it,
//     no inbox gauges are exported.
//   - [Timeline] (Driver, with Admin): stored outcomes per minute, through
//     the tables' time indexes, for the console's chart. Without it, the
//     console shows no chart.
//   - [CheckpointAdvancer] (Tx): offsets as the inbox
//     (txinbox.Processor.ProcessOffsets, kafka.OffsetWatermark): no inbox
//     row, the partition's checkpoint moved with a compare-and-set that
//     fences out a zombie consumer. Without it, ProcessOffsets fails and
//     such a source must key its messages into the inbox.
//   - [DeferredAdvancer] (Tx): the checkpoint's move travels with the
//     transaction's first round trip, so a batch of queued statements is
//     one round trip. Without it, the move is a statement of its own before
//     the handlers run ([CheckpointAdvancer]).
//   - [EffectClaimer] (Tx): declarative effects (txinbox.Config.Effect)
//     run their statements in the claim's own statement (mysqlstore: right
//     after it, in its transaction). Without it (and
//     without [EffectCommitter] answering), a processor with Config.Effect
//     fails its batches: a handler is needed instead.
//   - [CheckpointPlanner] (Tx): the checkpoint of a batch that acks every
//     message is saved by the claim's statement, not by a statement of its
//     own. Without it, SaveCheckpoint costs one more statement per batch.
//   - [StatementQueue] (Tx): statements that handlers queue are sent with
//     the commit, in its round trip, and flushed after each handler run
//     under a savepoint so that a failing one fails its own message.
//     Without it, handlers run their statements themselves and nothing is
//     flushed.
//   - [StatementRunner] (Driver): the per-message statements of an effect
//     given without Go (package effect) run with their parameter types
//     declared, so a statement may skip a parameter ($1, $2, $7) or cast
//     one, and each is prepared at start so a typo fails before the first
//     message. Without it, package effect runs them with database/sql's
//     ExecContext when the transaction is a *sql.Tx, and checks nothing.
//   - [EffectChecker] (Driver): package effect joins an effect given
//     without Go to the claim's statement (one round trip per batch) and
//     checks its statements at start. Without it, such an effect runs per
//     message, through a handler.
//   - [ReplyKeeper] (Tx): a handler's reply (txinbox.Message.Reply) is kept
//     in its inbox row and returned with later duplicates
//     (txinbox.Config.Replies, package httpinbox's replays). Without it, a
//     processor with Config.Replies fails its batches. Every store of
//     txinbox has it.
//   - [InFlightLocker] (Tx): a delivery of an id that another transaction
//     holds uncommitted ends at once as txinbox.InFlight
//     (txinbox.Config.FailFastInFlight), the rest of the batch going on.
//     Without it, the claim waits for that transaction to end.
//     pgstore and pgdbstore take transaction advisory locks; mysqlstore
//     named locks (GET_LOCK), which are the session's, so its connections
//     release them when the transaction ends; sqlitestore has none (one
//     writer: the claim waits).
//   - [DurabilityReader] (Driver): the settings that decide whether a
//     commit survives a crash or a failover are read at start (server.Run
//     refuses those that can lose acknowledged messages unless accepted)
//     and shown by status and the console. Without it, nothing is checked.
//     Every store of txinbox has it.
//   - [ReplyLister] (Driver): the newest inbox rows that hold a reply
//     (package httpinbox's keys), for the console's page of HTTP keys.
//     Without it, the console has no such page. Every store of txinbox
//     has it.
//
// TestOptionalCapabilitiesListed fails when an interface of this package
// other than Driver and Tx is missing from this list, so the list stays
// complete.
package store
