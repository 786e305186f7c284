package as4my

import (
	"context"

	"github.com/txinbox/txinbox/internal/mysqlkeys"
)

// CheckKeys refuses key columns of the messages table that do not compare
// bytes: scope and message_key must be binary strings (VARBINARY, as
// Migrate creates them). Changed to a text type with a case-insensitive
// collation, two messages whose keys differ in case would share one row,
// and a duplicate could be answered with the other's receipt. Migrate
// ends with it, as mysqlstore's Migrate ends with its CheckKeys.
func (s *Store) CheckKeys(ctx context.Context) error {
	return mysqlkeys.Check(ctx, s.db, "as4my", []string{s.t.Prefix + "as4_messages"}, []string{"scope", "message_key"})
}
