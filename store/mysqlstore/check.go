package mysqlstore

import (
	"context"

	"github.com/txinbox/txinbox/internal/mysqlkeys"
)

// CheckKeys refuses key columns that do not compare bytes: the inbox's
// and the dead letters' scope and message_id must be binary strings
// (VARBINARY, as Migrate creates them). A column changed to a text type
// with a case- or accent-insensitive collation (utf8mb4_general_ci, the
// default of many servers) would make "A" and "a" one key, and a PAD
// SPACE collation "a" and "a " one key: a message would be skipped as a
// duplicate of another.
func (d *Driver) CheckKeys(ctx context.Context) error {
	return mysqlkeys.Check(ctx, d.db, "mysqlstore", []string{d.t.Prefix + "inbox", d.t.Prefix + "dead_letters"}, []string{"scope", "message_id"})
}
