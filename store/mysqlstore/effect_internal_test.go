package mysqlstore

import (
	"strings"
	"testing"
)

// TestEffectForm: the table references to new_messages get the derived
// table, aliased new_messages unless the statement aliases them; column
// qualifiers, longer names and other databases' tables stay.
func TestEffectForm(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"INSERT INTO e SELECT scope FROM new_messages", "INSERT INTO e SELECT scope FROM (D) AS new_messages "},
		{"INSERT INTO e SELECT nm.scope FROM new_messages nm", "INSERT INTO e SELECT nm.scope FROM (D)  nm"},
		{"INSERT INTO e SELECT nm.scope FROM new_messages AS nm", "INSERT INTO e SELECT nm.scope FROM (D)  AS nm"},
		{"INSERT INTO e SELECT new_messages.scope FROM `new_messages` WHERE 1", "INSERT INTO e SELECT new_messages.scope FROM (D) AS new_messages  WHERE 1"},
		{"DELETE x FROM x JOIN new_messages ON x.id = new_messages . message_id", "DELETE x FROM x JOIN (D) AS new_messages  ON x.id = new_messages . message_id"},
		{"INSERT INTO e SELECT * FROM new_messages_old, db.new_messages, new_messages2", "INSERT INTO e SELECT * FROM new_messages_old, db.new_messages, new_messages2"},
		{"INSERT INTO e SELECT scope FROM new_messages\nON DUPLICATE KEY UPDATE n = n + 1", "INSERT INTO e SELECT scope FROM (D) AS new_messages \nON DUPLICATE KEY UPDATE n = n + 1"},
		{"INSERT INTO e SELECT scope FROM new_messages) x", "INSERT INTO e SELECT scope FROM (D) AS new_messages ) x"},
	} {
		got, args := cutEffect(c.in).bind("(D)", make([]any, 6))
		if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
		if refs := strings.Count(c.want, "(D)"); len(args) != 6*refs {
			t.Errorf("%q: %d arguments, want %d", c.in, len(args), 6*refs)
		}
	}
}
