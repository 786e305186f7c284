// Package mysqlkeys checks, on MySQL and MariaDB, that key columns
// compare bytes: the one check that store/mysqlstore's and as4/as4my's
// Migrate end with.
package mysqlkeys

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Check refuses the columns cols of tables (full names, in the current
// database) that are not binary strings (VARBINARY or BINARY), naming
// each with its type and collation, and refuses a column it does not
// find. A key column changed to a text type with a case- or
// accent-insensitive collation would make "A" and "a" one key, a PAD
// SPACE collation "a" and "a " one key: a message would be taken for
// another's duplicate. who prefixes the errors ("mysqlstore").
func Check(ctx context.Context, db *sql.DB, who string, tables, cols []string) error {
	rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, coalesce(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (`+marks(len(tables))+`)
		AND COLUMN_NAME IN (`+marks(len(cols))+`)`, append(anys(tables), anys(cols)...)...)
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
		return fmt.Errorf("%s: the key columns must compare bytes (VARBINARY), or keys that differ would be one: %s; "+
			"change them back (ALTER TABLE ... MODIFY ... VARBINARY)", who, strings.Join(bad, ", "))
	}
	if want := len(tables) * len(cols); n != want {
		return fmt.Errorf("%s: found %d of the %d key columns of %s (run Migrate)", who, n, want, strings.Join(tables, " and "))
	}
	return nil
}

func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
