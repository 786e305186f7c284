package pgsql

// GuardCTE marks the claim's transaction for the commit guard (migration
// 006): its deferred trigger refuses a COMMIT that is not CommitSQL. It
// is part of every claim statement, so it costs no round trip.
const GuardCTE = `WITH guard AS (INSERT INTO {tx_guard} AS g (backend_pid) VALUES (pg_backend_pid())
    ON CONFLICT (backend_pid) DO UPDATE SET batches = g.batches + 1)`

// MarkBatch is the second statement of every batch transaction (with
// its BEGIN, in one round trip): a setting local to the transaction, gone
// if a handler ends it with ROLLBACK as SQL, even with AND CHAIN (which
// leaves another transaction open).
const MarkBatch = "SELECT set_config('txinbox.batch', 'open', true)"

// NotBatchTx is the text of CheckBatch's error.
const NotBatchTx = "txinbox: not the batch transaction"

// BatchOpen is 1, or fails (invalid input syntax for type integer, naming
// NotBatchTx) when the transaction is no longer the batch's (MarkBatch).
const BatchOpen = "(CASE current_setting('txinbox.batch', true) WHEN 'open' THEN '1' ELSE '" + NotBatchTx + "' END)::int"

// CheckBatch checks that the transaction is still the batch's.
const CheckBatch = "SELECT " + BatchOpen

// CommitSetting tells the commit guard that the COMMIT after it is the
// processor's, once it checked that the transaction is the batch's.
const CommitSetting = "SELECT set_config('txinbox.commit', 'on', true), " + BatchOpen

// CommitSQL is the processor's commit of a batch transaction (one round
// trip, the simple protocol).
const CommitSQL = CommitSetting + "; COMMIT"

// GuardMarkCTE is GuardCTE that also sets MarkBatch's setting, for a
// store that cannot send MarkBatch in the BEGIN's round trip (a
// database/sql transaction begins on its own): every statement that arms
// the guard marks the transaction too, at no cost.
const GuardMarkCTE = `WITH guard AS (INSERT INTO {tx_guard} AS g (backend_pid)
    SELECT pg_backend_pid() FROM (SELECT set_config('txinbox.batch', 'open', true)) txinbox_mark
    ON CONFLICT (backend_pid) DO UPDATE SET batches = g.batches + 1)`
