package pgsql

import (
	"strings"

	"github.com/txinbox/txinbox/store/schema"
)

// Statements are a store's batch statements, expanded for its tables.
type Statements struct {
	// Claim inserts the batch's keys ($1-$7, BatchSelect) and returns
	// those it inserted; the others are looked up (Lookup).
	Claim string
	// ClaimClassify is Claim answering for every key it did not insert
	// (ClassifySelect): a batch with duplicates costs one round trip too.
	ClaimClassify string
	// ClaimCP and ClaimClassifyCP are Claim and ClaimClassify that also
	// save a checkpoint ($8-$11: scope, source, partition, position).
	ClaimCP, ClaimClassifyCP string
	// Lookup answers, in a snapshot of its own, the stored and
	// dead-lettered payload hashes of keys ($1, $2) with their ordinals.
	Lookup string
	// ClaimPartitioned and LookupPartitioned are Claim and Lookup of the
	// partitioned layout.
	ClaimPartitioned, LookupPartitioned string
	// Drift records drift rows, an array per column ($1-$7).
	Drift string
	// Failures counts failed attempts of keys the inbox does not hold and
	// returns their counts.
	Failures string
	// DeadLetter inserts one dead letter ($1-$13).
	DeadLetter string
	// Checkpoint saves a partition's position; a lower one never moves it
	// back. Checkpoints reads a source's positions.
	Checkpoint, Checkpoints string
	// Advance moves a checkpoint ($1-$4: scope, source, partition,
	// position) from where the caller saw it ($5, -1 for none) and
	// returns 1, or 0 when it is elsewhere; as a batch's first statement
	// it arms the commit guard. AdvanceGuarded fails instead of
	// answering 0 (AdvanceMoved).
	Advance, AdvanceGuarded string
}

// NewStatements expands the statements for t; periods is the qualified
// table of the partitioned layout's periods.
func NewStatements(t schema.Tables, periods string) Statements {
	s := Statements{
		Claim:         t.Expand(GuardCTE + claimInsert + "\nRETURNING scope, message_id"),
		ClaimClassify: t.Expand(GuardCTE+",\ntxinbox_inserted AS ("+claimInsert+"\nRETURNING scope, message_id)") + ClassifySelect(t, BatchKeys),
		// A new statement, so a new READ COMMITTED snapshot: it sees the
		// rows of the transactions the claim waited for. Only the keys the
		// claim did not answer are looked up: after ClaimClassify, usually
		// none.
		Lookup:      t.Expand(lookup),
		Drift:       t.Expand(drift),
		Failures:    t.Expand(failures),
		DeadLetter:  t.Expand(deadLetter),
		Checkpoint:  t.Expand(checkpoint),
		Checkpoints: t.Expand(`SELECT partition, position FROM {checkpoints} WHERE scope = $1 AND source = $2`),
	}
	// The claims that also save a planned checkpoint ($8-$11), in the
	// first statement of a batch.
	guard := t.Expand(GuardCTE)
	cp := t.Expand(`,
txinbox_checkpoint AS (INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($8, $9, $10, $11, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)`)
	s.ClaimCP = strings.Replace(s.Claim, guard, guard+cp, 1)
	s.ClaimClassifyCP = strings.Replace(s.ClaimClassify, guard, guard+cp, 1)
	s.ClaimPartitioned = strings.ReplaceAll(t.Expand(claimPartitioned), "{periods}", periods)
	s.LookupPartitioned = t.Expand(lookupPartitioned)
	s.Advance, s.AdvanceGuarded = advance(t), advanceGuarded(t)
	return s
}

// claimInsert claims the whole batch in one statement. Rows are inserted
// in key order so that two batches sharing keys wait for each other
// instead of deadlocking. Keys already dead-lettered are skipped.
var claimInsert = `
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM ` + BatchRows + `
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING`

// claimPartitioned inserts into the current period's partition only keys
// that no older partition holds. It runs after the transaction took the
// period lock shared (a statement of its own, so this statement's
// snapshot is taken after the lock was granted): see pgstore's
// partition.go for why that closes the race with a period switch. Within
// one period, the partition's unique index serialises concurrent claims
// of a key as in the plain layout.
var claimPartitioned = GuardCTE + `,
c AS (SELECT (SELECT period FROM {periods} WHERE ended_at IS NULL) AS period)
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, period)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp(), c.period
FROM ` + BatchRows + `
CROSS JOIN c
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
  AND NOT EXISTS (SELECT 1 FROM {inbox} i WHERE i.scope = m.scope AND i.message_id = m.message_id AND i.period < c.period)
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id, period) DO NOTHING
RETURNING scope, message_id`

// lookupPartitioned: at most one row per key exists across the
// partitions; LIMIT 1 keeps the lookup one row per key even if an
// operator copied rows.
const lookupPartitioned = `
SELECT m.ord, i.payload_hash, d.payload_hash
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(scope, message_id, ord)
LEFT JOIN LATERAL (SELECT x.payload_hash FROM {inbox} x WHERE x.scope = m.scope AND x.message_id = m.message_id
                   ORDER BY x.period LIMIT 1) i ON true
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> ''`

// The texts of the Statements fields of the same names, before
// expansion.
const lookup = `
SELECT m.ord, i.payload_hash, d.payload_hash
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(scope, message_id, ord)
LEFT JOIN {inbox} i ON i.scope = m.scope AND i.message_id = m.message_id
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> ''`

const drift = `
INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[], $7::timestamptz[])`

const failures = `
INSERT INTO {attempts} AS a (scope, message_id, attempts, last_error, first_failed_at, last_failed_at)
SELECT m.scope, m.message_id, 1, m.err, m.at, m.at
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS m(scope, message_id, err, at)
WHERE NOT EXISTS (SELECT 1 FROM {inbox} i WHERE i.scope = m.scope AND i.message_id = m.message_id)
ON CONFLICT (scope, message_id) DO UPDATE
   SET attempts = a.attempts + 1, last_error = EXCLUDED.last_error, last_failed_at = EXCLUDED.last_failed_at
RETURNING scope, message_id, attempts`

const deadLetter = `
INSERT INTO {dead_letters} (scope, message_id, source, source_position, partition_key, payload, payload_hash,
    headers, attempts, reason, last_error, received_at, dead_lettered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13)
ON CONFLICT (scope, message_id) WHERE message_id <> '' DO NOTHING`

const checkpoint = `
INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($1, $2, $3, $4, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at`
