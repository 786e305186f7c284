package as4my

import (
	"context"
	"fmt"
	"strings"
)

// CheckKeys refuses key columns of the messages table that do not compare
// bytes: scope and message_key must be binary strings (VARBINARY, as
// Migrate creates them). Changed to a text type with a case-insensitive
// collation, two messages whose keys differ in case would share one row,
// and a duplicate could be answered with the other's receipt. Migrate
// ends with it, as mysqlstore's Migrate ends with its CheckKeys.
func (s *Store) CheckKeys(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, coalesce(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
		AND COLUMN_NAME IN ('scope', 'message_key')`, s.t.Prefix+"as4_messages")
	if err != nil {
		return err
	}
	defer rows.Close()
	var bad []string
	n := 0
	for rows.Next() {
		var col, typ, coll string
		if err := rows.Scan(&col, &typ, &coll); err != nil {
			return err
		}
		n++
		if typ != "varbinary" && typ != "binary" {
			bad = append(bad, fmt.Sprintf("%sas4_messages.%s is %s %s", s.t.Prefix, col, typ, coll))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("as4my: the key columns must compare bytes (VARBINARY), or keys that differ would be one: %s; "+
			"change them back (ALTER TABLE ... MODIFY ... VARBINARY)", strings.Join(bad, ", "))
	}
	if n != 2 {
		return fmt.Errorf("as4my: found %d of the 2 key columns of %sas4_messages (run Migrate)", n, s.t.Prefix)
	}
	return nil
}
