package mysqlstore

import "testing"

// TestReadsMessagesAnyCase: a statement naming payload or headers in
// another case still gets them (SQL's column names are case-insensitive);
// one naming neither reads the stored rows.
func TestReadsMessagesAnyCase(t *testing.T) {
	for s, want := range map[string]bool{
		"INSERT INTO t SELECT scope, message_id FROM new_messages":        false,
		"INSERT INTO t SELECT scope, PAYLOAD FROM new_messages":           true,
		"INSERT INTO t SELECT scope, Headers FROM new_messages":           true,
		"INSERT INTO t SELECT * FROM new_messages":                        true,
		"INSERT INTO t (a) SELECT JSON_LENGTH(headers) FROM new_messages": true,
	} {
		if got := readsMessages([]string{s}); got != want {
			t.Errorf("readsMessages(%q) = %v, want %v", s, got, want)
		}
	}
}
