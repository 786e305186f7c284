package mysqlstore

import (
	"context"
	"fmt"
	"strings"
)

// CheckKeys refuses key columns that do not compare bytes: the inbox's
// and the dead letters' scope and message_id must be binary strings
// (VARBINARY, as Migrate creates them). A column changed to a text type
// with a case- or accent-insensitive collation (utf8mb4_general_ci, the
// default of many servers) would make "A" and "a" one key, and a PAD
// SPACE collation "a" and "a " one key: a message would be skipped as a
// duplicate of another.
func (d *Driver) CheckKeys(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, coalesce(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)
		AND COLUMN_NAME IN ('scope', 'message_id')`, d.t.Prefix+"inbox", d.t.Prefix+"dead_letters")
	if err != nil {
		return err
	}
	defer rows.Close()
	var bad []string
	n := 0
	for rows.Next() {
		var table, col, typ, coll string
		if err := rows.Scan(&table, &col, &typ, &coll); err != nil {
			return err
		}
		n++
		if typ != "varbinary" && typ != "binary" {
			bad = append(bad, fmt.Sprintf("%s.%s is %s %s", table, col, typ, coll))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("mysqlstore: the key columns must compare bytes (VARBINARY), or keys that differ would be one: %s; "+
			"change them back (ALTER TABLE ... MODIFY ... VARBINARY)", strings.Join(bad, ", "))
	}
	if n != 4 {
		return fmt.Errorf("mysqlstore: found %d of the 4 key columns of %sinbox and %sdead_letters (run Migrate)", n, d.t.Prefix, d.t.Prefix)
	}
	return nil
}
