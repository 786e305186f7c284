package pgsql

import (
	"strings"

	"github.com/txinbox/txinbox/store/schema"
)

// advance moves a partition's checkpoint from $5 (-1: none) to $4, and
// returns 1 when it did, 0 when the saved checkpoint is elsewhere. The
// UPDATE locks the row: a concurrent transaction of the partition waits,
// then (READ COMMITTED re-checks the WHERE on the committed row) finds the
// position moved and matches nothing. Two first checkpoints conflict on
// the primary key: the second waits, then does nothing. The guard CTE
// arms the commit guard, as the claim does: this is the first statement
// of a batch that writes no inbox row.
func advance(t schema.Tables) string {
	return t.Expand(GuardCTE + `,
up AS (UPDATE {checkpoints} SET position = $4, updated_at = now()
       WHERE scope = $1 AND source = $2 AND partition = $3 AND position = $5::bigint
       RETURNING 1),
ins AS (INSERT INTO {checkpoints} (scope, source, partition, position, updated_at)
        SELECT $1, $2, $3, $4, now() WHERE $5::bigint = -1
        ON CONFLICT (scope, source, partition) DO NOTHING
        RETURNING 1)
SELECT (SELECT count(*) FROM up) + (SELECT count(*) FROM ins)`)
}

// AdvanceMoved names the failure of Statements.AdvanceGuarded.
const AdvanceMoved = "txinbox: checkpoint moved"

// advanceGuarded is advance failing (invalid input syntax for type
// integer, naming AdvanceMoved) when the checkpoint is not where the
// caller saw it: statements sent after it in the same round trip, and the
// COMMIT, are then skipped by the server.
func advanceGuarded(t schema.Tables) string {
	s := advance(t)
	i := strings.LastIndex(s, "SELECT (SELECT count(*) FROM up)")
	return s[:i] + "SELECT (CASE (SELECT count(*) FROM up) + (SELECT count(*) FROM ins) WHEN 1 THEN '1' ELSE '" +
		AdvanceMoved + "' END)::int"
}
