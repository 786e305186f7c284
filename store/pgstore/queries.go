package pgstore

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/txinbox/txinbox/internal/schema"
)

// queries are the driver's SQL, expanded once for its tables. Every value is
// a bound parameter; only validated identifiers are spliced in.
type queries struct {
	claim, claimClassify, lookup, drift, failures, deadLetter string
	checkpoint, checkpoints                                   string
	// claimCP and claimClassifyCP are claim and claimClassify that
	// also save a checkpoint.
	claimCP, claimClassifyCP string
	// advance moves a checkpoint from where the caller saw it
	// (offsets.go).
	advance string
	// advanceGuarded is advance failing (advanceMoved) instead of
	// answering 0 (DeferAdvance).
	advanceGuarded string
	// tables expands the declarative effects' claims, cached in effects
	// by their statements (effect.go).
	tables  schema.Tables
	effects *sync.Map
	recent  *[32]atomic.Pointer[recentEffect]
	// payloadReads caches readsPayload by the effect's statements,
	// lastReads its last answer.
	payloadReads *sync.Map
	lastReads    *atomic.Pointer[lastReads]
	// duplicates says whether the driver's last claim of the plain
	// layout met keys it did not insert: the next claim then uses
	// claimClassify, which saves the lookup's round trip.
	duplicates *atomic.Bool
	// The claim and lookup of the partitioned layout (partition.go).
	claimPartitioned, lookupPartitioned string
}

// batchSelect selects a claim's batch, u(scope, message_id, source,
// source_position, partition_key, payload_hash, received_at), from
// parameters $1-$7, an array per column; with ordinality also the 1-based
// ordinal ord, with payload also payload ($8) and headers ($9). A column
// whose value is the same in every row may come as an array of that one
// value (newClaimArgs): unnest pads it with NULLs to the length of the
// others, and coalesce gives every row the first element back. Such a
// batch ships and decodes one value instead of one per message (scope and
// source nearly always; often partition_key, source_position and
// received_at). No column is ever NULL, so a NULL is always padding.
func batchSelect(ordinality, payload bool) string {
	cols, arrays, names, with := "", "", "", ""
	if payload {
		cols, arrays, names = ", u.payload, u.headers", ", $8::bytea[], $9::text[]", ", payload, headers"
	}
	if ordinality {
		cols, names, with = cols+", u.ord", names+", ord", " WITH ORDINALITY"
	}
	return `SELECT coalesce(u.scope, ($1::text[])[1]) AS scope, u.message_id,
        coalesce(u.source, ($3::text[])[1]) AS source, coalesce(u.source_position, ($4::text[])[1]) AS source_position,
        coalesce(u.partition_key, ($5::text[])[1]) AS partition_key, u.payload_hash,
        coalesce(u.received_at, ($7::timestamptz[])[1]) AS received_at` + cols + `
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::timestamptz[]` + arrays + `)` + with + `
         AS u(scope, message_id, source, source_position, partition_key, payload_hash, received_at` + names + `)`
}

// batchRows is the batch as the rows m of a claim's insert (batchSelect).
var batchRows = "(" + batchSelect(false, false) + ") AS m"

// batchKeys is the keys of batchRows with their 1-based ordinals, m(scope,
// message_id, ord).
const batchKeys = `(SELECT coalesce(u.scope, ($1::text[])[1]) AS scope, u.message_id, u.ord
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(scope, message_id, ord)) AS m`

// qualify quotes name (already validated) and qualifies it with schema.
func qualify(schema, name string) string {
	if schema == "" {
		return `"` + name + `"`
	}
	return `"` + schema + `"."` + name + `"`
}

// guardCTE marks the claim's transaction for the commit guard (migration
// 006): its deferred trigger refuses a COMMIT that is not commitSQL. It
// is part of every claim statement, so it costs no round trip.
const guardCTE = `WITH guard AS (INSERT INTO {tx_guard} AS g (backend_pid) VALUES (pg_backend_pid())
    ON CONFLICT (backend_pid) DO UPDATE SET batches = g.batches + 1)`

// markBatch is the second statement of every batch transaction (with
// its BEGIN, in one round trip): a setting local to the transaction, gone
// if a handler ends it with ROLLBACK as SQL, even with AND CHAIN (which
// leaves another transaction open).
const markBatch = "SELECT set_config('txinbox.batch', 'open', true)"

// notBatchTx is the text of checkBatch's error.
const notBatchTx = "txinbox: not the batch transaction"

// batchOpen is 1, or fails (invalid input syntax for type integer, naming
// notBatchTx) when the transaction is no longer the batch's (markBatch).
const batchOpen = "(CASE current_setting('txinbox.batch', true) WHEN 'open' THEN '1' ELSE '" + notBatchTx + "' END)::int"

// checkBatch checks that the transaction is still the batch's.
const checkBatch = "SELECT " + batchOpen

// commitSetting tells the commit guard that the COMMIT after it is the
// processor's, once it checked that the transaction is the batch's.
const commitSetting = "SELECT set_config('txinbox.commit', 'on', true), " + batchOpen

// commitSQL is the processor's commit of a batch transaction (one round
// trip, the simple protocol).
const commitSQL = commitSetting + "; COMMIT"

// classifySelect ends a claim whose insert is the CTE txinbox_inserted:
// it returns, for each key of the batch (from, with its ordinal ord) that
// the insert did not insert, the payload hash stored in the inbox or else
// in the dead-letter table, as the claim's snapshot saw them; the keys it
// does not return were inserted (classifyClaimed).
//
// The SELECT shares the INSERT's snapshot: it does not see the rows just
// inserted (hence the anti-join on txinbox_inserted), nor a conflicting
// row that a concurrent transaction committed after the snapshot was
// taken (ON CONFLICT waited for it, then skipped the key). Such a key
// comes back with neither hash and goes to the lookup statement, whose
// snapshot is newer. The dead letters are probed only for keys the inbox
// does not hold: of a key in both, classifySeen takes the inbox's hash
// anyway. OFFSET 0 keeps the inbox probe from being planned twice. With
// carry, each row also has scope, message_id and those columns of from,
// after ord, hash and dead.
func classifySelect(t schema.Tables, from string, carry ...string) string {
	inner, outer := "", ""
	for _, c := range carry {
		inner, outer = inner+", m."+c, outer+", s."+c
	}
	if len(carry) > 0 {
		outer = ", s.scope, s.message_id" + outer
	}
	return t.Expand(`
SELECT s.ord, s.hash,
       CASE WHEN s.hash IS NULL THEN
            (SELECT d.payload_hash FROM {dead_letters} d WHERE d.scope = s.scope AND d.message_id = s.message_id AND d.message_id <> '') END AS dead` + outer + `
FROM (SELECT m.ord, m.scope, m.message_id` + inner + `,
             (SELECT i.payload_hash FROM {inbox} i WHERE i.scope = m.scope AND i.message_id = m.message_id) AS hash
      FROM ` + from + `
      WHERE NOT EXISTS (SELECT 1 FROM txinbox_inserted ins WHERE ins.scope = m.scope AND ins.message_id = m.message_id)
      OFFSET 0) s`)
}

func newQueries(t schema.Tables, periods string) queries {
	q := queries{
		tables:       t,
		effects:      new(sync.Map),
		payloadReads: new(sync.Map),
		lastReads:    new(atomic.Pointer[lastReads]),
		recent:       new([32]atomic.Pointer[recentEffect]),
		duplicates:   new(atomic.Bool),
		// One statement claims the whole batch. Rows are inserted in key
		// order so that two batches sharing keys wait for each other
		// instead of deadlocking. Keys already dead-lettered are skipped.
		// It returns the keys it inserted; the others are looked up.
		claim: t.Expand(guardCTE + `
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM ` + batchRows + `
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING scope, message_id`),
		// claimClassify is the same claim answering for every key it
		// did not insert (classifySelect), so that a batch with
		// duplicates costs one round trip too, but every batch a little
		// more server time (used while batches have duplicates: see
		// pgTx.Claim).
		claimClassify: t.Expand(guardCTE+`,
txinbox_inserted AS (
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM `+batchRows+`
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING scope, message_id)`) + classifySelect(t, batchKeys),
		// A new statement, so a new READ COMMITTED snapshot: it sees the
		// rows of the transactions the claim waited for. Only the keys the
		// claim did not answer are looked up: after claimClassify, usually
		// none.
		lookup: t.Expand(`
SELECT m.ord, i.payload_hash, d.payload_hash
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(scope, message_id, ord)
LEFT JOIN {inbox} i ON i.scope = m.scope AND i.message_id = m.message_id
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> ''`),
		drift: t.Expand(`
INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[], $7::timestamptz[])`),
		failures: t.Expand(`
INSERT INTO {attempts} AS a (scope, message_id, attempts, last_error, first_failed_at, last_failed_at)
SELECT m.scope, m.message_id, 1, m.err, m.at, m.at
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS m(scope, message_id, err, at)
WHERE NOT EXISTS (SELECT 1 FROM {inbox} i WHERE i.scope = m.scope AND i.message_id = m.message_id)
ON CONFLICT (scope, message_id) DO UPDATE
   SET attempts = a.attempts + 1, last_error = EXCLUDED.last_error, last_failed_at = EXCLUDED.last_failed_at
RETURNING scope, message_id, attempts`),
		deadLetter: t.Expand(`
INSERT INTO {dead_letters} (scope, message_id, source, source_position, partition_key, payload, payload_hash,
    headers, attempts, reason, last_error, received_at, dead_lettered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13)
ON CONFLICT (scope, message_id) WHERE message_id <> '' DO NOTHING`),
	}
	// The partition watermarks: a lower position never moves one back.
	q.checkpoint = t.Expand(`
INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($1, $2, $3, $4, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at`)
	q.advance = advanceSQL(t)
	q.advanceGuarded = advanceGuardedSQL(t)
	// The claims that also save a planned checkpoint ($8-$11), in the
	// first statement of a batch (pgTx.PlanCheckpoint).
	guard := t.Expand(guardCTE)
	cp := t.Expand(`,
txinbox_checkpoint AS (INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($8, $9, $10, $11, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)`)
	q.claimCP = strings.Replace(q.claim, guard, guard+cp, 1)
	q.claimClassifyCP = strings.Replace(q.claimClassify, guard, guard+cp, 1)
	q.checkpoints = t.Expand(`SELECT partition, position FROM {checkpoints} WHERE scope = $1 AND source = $2`)
	// The partitioned claim inserts into the current period's partition
	// only keys that no older partition holds. It runs after the
	// transaction took the period lock shared (a statement of its own, so
	// this statement's snapshot is taken after the lock was granted): see
	// partition.go for why that closes the race with a period switch.
	// Within one period, the partition's unique index serialises
	// concurrent claims of a key as in the plain layout.
	q.claimPartitioned = strings.ReplaceAll(t.Expand(guardCTE+`,
c AS (SELECT (SELECT period FROM {periods} WHERE ended_at IS NULL) AS period)
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, period)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp(), c.period
FROM `+batchRows+`
CROSS JOIN c
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
  AND NOT EXISTS (SELECT 1 FROM {inbox} i WHERE i.scope = m.scope AND i.message_id = m.message_id AND i.period < c.period)
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id, period) DO NOTHING
RETURNING scope, message_id`), "{periods}", periods)
	// At most one row per key exists across the partitions; LIMIT 1
	// keeps the lookup one row per key even if an operator copied rows.
	q.lookupPartitioned = t.Expand(`
SELECT m.ord, i.payload_hash, d.payload_hash
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(scope, message_id, ord)
LEFT JOIN LATERAL (SELECT x.payload_hash FROM {inbox} x WHERE x.scope = m.scope AND x.message_id = m.message_id
                   ORDER BY x.period LIMIT 1) i ON true
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> ''`)
	return q
}
