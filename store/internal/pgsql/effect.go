package pgsql

import (
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/store/schema"
)

// EffectSQL is the relation a declarative effect's statements read the
// batch's new messages from (pgstore.EffectSQL documents the form).
const EffectSQL = "new_messages(scope text, message_id text, source text, source_position text, partition_key text, " +
	"payload bytea, headers jsonb, received_at timestamptz)"

// EffectForm names one of the forms of an effect's claim (EffectClaim).
type EffectForm struct {
	// Classify answers for the keys the claim does not insert
	// (ClassifySelect); without it the claim returns the keys it inserted.
	Classify bool
	// Committed is the autocommit form: no commit guard (no handler runs).
	Committed bool
	// Checkpoint saves the checkpoint given after the arrays.
	Checkpoint bool
	// Payload joins the batch's payloads and headers to the inserted rows,
	// for statements that read them.
	Payload bool
	// Drift (committed, with a checkpoint, classifying) also records the
	// drift the claim finds and fails unless it answered for every key
	// (driftTail).
	Drift bool
}

// EffectForms is the number of forms (EffectForm.Index).
const EffectForms = 32

// Index numbers the forms from 0 to EffectForms-1.
func (f EffectForm) Index() int {
	i := 0
	for bit, on := range []bool{f.Classify, f.Committed, f.Checkpoint, f.Payload, f.Drift} {
		if on {
			i |= 1 << bit
		}
	}
	return i
}

// UnansweredKey is the text of the error of a drift form's statement that
// could not answer for every key.
const UnansweredKey = "txinbox: unanswered key"

// ProbeSetting starts the names of the settings EffectProbe reads in place
// of payload and headers: its plan names it wherever they are read.
const ProbeSetting = "txinbox.probe_"

// probeColumns are new_messages' payload and headers in EffectProbe:
// expressions that show in the plan by name wherever they are evaluated
// (current_setting is stable, so the planner keeps the call).
const probeColumns = "current_setting('" + ProbeSetting + "payload', true)::bytea AS payload, " +
	"current_setting('" + ProbeSetting + "headers', true)::jsonb AS headers, "

// EffectClaim is the claim statement of a declarative effect in a form:
// with Classify it answers for the keys it does not insert
// (ClassifySelect), otherwise it returns the keys it inserted. The
// autocommit form (Committed) has no commit guard (no handler runs) and
// saves the checkpoint given after the arrays when Checkpoint is set.
//
// Statements that read a message's payload or headers (Payload) need
// the batch's rows joined to the inserted ones: the inbox row holds
// neither. The others read new_messages straight from the insert's
// RETURNING, and the batch ships no payloads: on PostgreSQL 15 the join
// and the payloads were 10-15% of the declarative claim's time (see
// EffectProbe for how the form is chosen). Their new_messages has no
// payload and headers columns, so that a statement that did read them
// fails loudly instead of reading NULL.
func EffectClaim(t schema.Tables, statements []string, f EffectForm) string {
	return effectClaimWith(t, statements, f, "")
}

// EffectProbe is the autocommitted claim without the join whose
// new_messages has payload and headers as settings named ProbeSetting...:
// the plan of it (EXPLAIN VERBOSE, with the seven claim arrays empty)
// names ProbeSetting only if the statements read payload or headers.
func EffectProbe(t schema.Tables, statements []string) string {
	return effectClaimWith(t, statements, EffectForm{Committed: true}, probeColumns)
}

// effectClaimWith is EffectClaim; a probe (EffectProbe) gives the no-join
// form's new_messages the columns payload and headers as the expressions
// in probe.
func effectClaimWith(t schema.Tables, statements []string, f EffectForm, probe string) string {
	var b strings.Builder
	if f.Committed {
		b.WriteString("WITH ")
	} else {
		b.WriteString(t.Expand(GuardCTE) + ",\n")
	}
	insertFrom, next := "txinbox_batch m", 10
	switch {
	case f.Payload:
		b.WriteString(batchCTE(true))
	case f.Classify:
		// ClassifySelect reads the batch again, with its ordinals.
		b.WriteString(batchCTE(false))
		next = 8
	default:
		insertFrom, next = BatchRows, 8
	}
	b.WriteString(t.Expand(effectInsert(insertFrom, f.Payload)))
	b.WriteString(newMessages(f.Payload, probe))
	for i, s := range statements {
		// A trailing semicolon would end the claim; the line break keeps
		// a trailing -- comment from swallowing the parenthesis.
		s = strings.TrimRight(strings.TrimSpace(s), "; \t\r\n")
		fmt.Fprintf(&b, ",\ntxinbox_effect_%d AS (%s\n)", i+1, s)
	}
	b.WriteString(effectTail(t, f, next))
	return b.String()
}

// effectInsert is the CTE txinbox_inserted of an effect's claim, the
// inbox insert of the batch's rows in from; with payload it returns only
// the keys (new_messages then reads the batch's rows).
func effectInsert(from string, payload bool) string {
	returning := "scope, message_id"
	if !payload {
		returning = "scope, message_id, source, source_position, partition_key, received_at"
	}
	return `txinbox_inserted AS (
INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, clock_timestamp()
FROM ` + from + `
WHERE NOT EXISTS (SELECT 1 FROM {dead_letters} d WHERE d.scope = m.scope AND d.message_id = m.message_id AND d.message_id <> '')
ORDER BY m.scope, m.message_id
ON CONFLICT (scope, message_id) DO NOTHING
RETURNING ` + returning + `),
`
}

// newMessages is the CTE new_messages: with payload the batch's inserted
// rows (txinbox_new), otherwise the insert's RETURNING, whose payload and
// headers are probe's expressions if any.
func newMessages(payload bool, probe string) string {
	if payload {
		return `txinbox_new AS (
SELECT m.* FROM txinbox_batch m JOIN txinbox_inserted i ON i.scope = m.scope AND i.message_id = m.message_id),
new_messages AS (
SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload, m.headers::jsonb AS headers, m.received_at
FROM txinbox_new m)`
	}
	return `new_messages AS (
SELECT i.scope, i.message_id, i.source, i.source_position, i.partition_key, ` + probe + `i.received_at
FROM txinbox_inserted i)`
}

// effectTail ends an effect's claim after its statements: the drift and
// checkpoint of a drift form (driftTail), or the checkpoint if any, then
// what the claim returns. The checkpoint's parameters start at $next.
func effectTail(t schema.Tables, f EffectForm, next int) string {
	if f.Drift {
		return driftTail(t, next)
	}
	tail := ""
	if f.Checkpoint {
		tail = t.Expand(fmt.Sprintf(`,
txinbox_checkpoint AS (INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
VALUES ($%d, $%d, $%d, $%d, now())
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)`, next, next+1, next+2, next+3))
	}
	switch {
	case f.Classify:
		return tail + ClassifySelect(t, "txinbox_batch m")
	case f.Payload:
		// The batch's ordinals of the rows it inserted: read without a
		// string or a map per row.
		return tail + "\nSELECT ord FROM txinbox_new"
	default:
		return tail + "\nSELECT scope, message_id FROM txinbox_inserted"
	}
}

// driftTail ends the autocommitted claim with a checkpoint: it classifies
// the keys it did not insert (ClassifySelect, as txinbox_seen), records
// the drift among them (a stored payload hash, the inbox's or else the
// dead letter's, other than the one received), and saves the checkpoint
// (parameters $next to $next+3) only if every key was answered: otherwise
// the cast of UnansweredKey fails the whole statement. A key neither
// inserted nor seen had its conflicting row committed after the
// statement's snapshot; its drift could not be recorded here, and the
// checkpoint must not move past it unrecorded. The drift's detection time
// is parameter $next+4.
func driftTail(t schema.Tables, next int) string {
	return ",\ntxinbox_seen AS (" + ClassifySelect(t, "txinbox_batch m", "source", "source_position", "payload_hash") + ")" +
		t.Expand(fmt.Sprintf(`,
txinbox_drift AS (
INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
SELECT scope, message_id, source, source_position, coalesce(hash, dead), payload_hash, $%[5]d::timestamptz
FROM txinbox_seen WHERE coalesce(hash, dead) <> payload_hash),
txinbox_checkpoint AS (
INSERT INTO {checkpoints} AS c (scope, source, partition, position, updated_at)
SELECT $%[1]d::text, $%[2]d::text, $%[3]d::text, $%[4]d::bigint, now()
WHERE (SELECT (CASE WHEN bool_and(hash IS NOT NULL OR dead IS NOT NULL) IS NOT FALSE THEN '1'
                    ELSE '`+UnansweredKey+`' END)::int FROM txinbox_seen) = 1
ON CONFLICT (scope, source, partition) DO UPDATE
   SET position = GREATEST(c.position, EXCLUDED.position), updated_at = EXCLUDED.updated_at)
SELECT ord, hash, dead FROM txinbox_seen`, next, next+1, next+2, next+3, next+4))
}

// batchCTE is the CTE txinbox_batch of an effect's claim: the batch with
// its ordinals, and with payload its payloads and headers (BatchSelect).
func batchCTE(payload bool) string {
	return "txinbox_batch AS (" + BatchSelect(true, payload) + "),\n"
}
