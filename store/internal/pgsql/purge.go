package pgsql

// PurgeLockTimeout is how long a purge batch's plain DELETE may wait for
// a row that another transaction holds (a Forget, or the claim of an
// expired key) before the batch is redone skipping locked rows.
const PurgeLockTimeout = "50ms"

// PurgeDeletes are one purge batch's DELETEs of the inbox, attempts and
// drift rows older than $1 (of scope $2, or all when ”), at most $3 of
// each: by ctid in the plain layout (a heap fetch, no index probe), by
// key in the partitioned one (a ctid is unique only per partition).
// locking is appended to the row selection (" FOR UPDATE SKIP LOCKED").
func PurgeDeletes(partitioned bool, locking string) [3]string {
	inbox := `DELETE FROM {inbox} WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM {inbox} WHERE received_at < $1 AND ($2 = '' OR scope = $2)
		ORDER BY received_at LIMIT $3` + locking + `))`
	if partitioned {
		inbox = `DELETE FROM {inbox} i USING (
		SELECT scope, message_id, period FROM {inbox} WHERE received_at < $1 AND ($2 = '' OR scope = $2)
		ORDER BY received_at LIMIT $3` + locking + `) v
		WHERE i.scope = v.scope AND i.message_id = v.message_id AND i.period = v.period`
	}
	other := func(table, column string) string {
		return `DELETE FROM ` + table + ` WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM ` + table + ` WHERE ` + column + ` < $1 AND ($2 = '' OR scope = $2)
		ORDER BY ` + column + ` LIMIT $3` + locking + `))`
	}
	return [3]string{inbox, other("{attempts}", "last_failed_at"), other("{drift}", "detected_at")}
}

// PurgeCount counts what a purge before $1 (of scope $2) would remove:
// inbox, attempts and drift rows; on a partitioned inbox, also the rows
// of the partitions it would drop.
func PurgeCount(partitioned bool) string {
	inbox := `(SELECT count(*) FROM {inbox} WHERE received_at < $1 AND ($2 = '' OR scope = $2))`
	if partitioned {
		inbox = `(SELECT count(*) FROM {inbox} WHERE ($2 = '' OR scope = $2) AND (received_at < $1
			OR ($2 = '' AND period IN (SELECT period FROM {periods} WHERE ended_at < $1 AND dropped_at IS NULL))))`
	}
	return `SELECT ` + inbox + `,
		(SELECT count(*) FROM {attempts} WHERE last_failed_at < $1 AND ($2 = '' OR scope = $2)),
		(SELECT count(*) FROM {drift} WHERE detected_at < $1 AND ($2 = '' OR scope = $2))`
}
