package pgsql

import "github.com/txinbox/txinbox/store/schema"

// BatchSelect selects a claim's batch, u(scope, message_id, source,
// source_position, partition_key, payload_hash, received_at), from
// parameters $1-$7, an array per column; with ordinality also the 1-based
// ordinal ord, with payload also payload ($8) and headers ($9). A column
// whose value is the same in every row may come as an array of that one
// value: unnest pads it with NULLs to the length of the others, and
// coalesce gives every row the first element back. Such a batch ships and
// decodes one value instead of one per message (scope and source nearly
// always; often partition_key, source_position and received_at). No
// column is ever NULL, so a NULL is always padding.
func BatchSelect(ordinality, payload bool) string {
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

// BatchRows is the batch as the rows m of a claim's insert (BatchSelect).
var BatchRows = "(" + BatchSelect(false, false) + ") AS m"

// BatchKeys is the keys of BatchRows with their 1-based ordinals,
// m(scope, message_id, ord).
const BatchKeys = `(SELECT coalesce(u.scope, ($1::text[])[1]) AS scope, u.message_id, u.ord
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(scope, message_id, ord)) AS m`

// ClassifySelect ends a claim whose insert is the CTE txinbox_inserted:
// it returns, for each key of the batch (from, with its ordinal ord) that
// the insert did not insert, the payload hash stored in the inbox or else
// in the dead-letter table, as the claim's snapshot saw them; the keys it
// does not return were inserted.
//
// The SELECT shares the INSERT's snapshot: it does not see the rows just
// inserted (hence the anti-join on txinbox_inserted), nor a conflicting
// row that a concurrent transaction committed after the snapshot was
// taken (ON CONFLICT waited for it, then skipped the key). Such a key
// comes back with neither hash and goes to the lookup statement, whose
// snapshot is newer. The dead letters are probed only for keys the inbox
// does not hold: of a key in both, the store takes the inbox's hash
// anyway. OFFSET 0 keeps the inbox probe from being planned twice. With
// carry, each row also has scope, message_id and those columns of from,
// after ord, hash and dead.
func ClassifySelect(t schema.Tables, from string, carry ...string) string {
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
