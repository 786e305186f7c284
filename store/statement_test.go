package store_test

import (
	"testing"

	"github.com/txinbox/txinbox/store"
)

func TestInspectStatement(t *testing.T) {
	for _, c := range []struct {
		sql      string
		want     store.Statement
		setBased bool
	}{
		{"INSERT INTO t VALUES ($1, $2, $7)", store.Statement{MaxParam: 7}, false},
		{"UPDATE t SET at = $10, body = $9 WHERE key = $2", store.Statement{MaxParam: 10}, false},
		{"INSERT INTO t VALUES ($12)", store.Statement{MaxParam: 12}, false},
		{"INSERT INTO t SELECT scope, message_id FROM new_messages", store.Statement{ReadsNewMessages: true}, true},
		{"INSERT INTO t SELECT $1, message_id FROM new_messages", store.Statement{MaxParam: 1, ReadsNewMessages: true}, false},
		{"DELETE FROM t", store.Statement{}, false},
		{"SELECT '$'", store.Statement{}, false},
	} {
		got := store.InspectStatement(c.sql)
		if got != c.want || got.SetBased() != c.setBased {
			t.Errorf("InspectStatement(%q) = %+v (set-based %v), want %+v (%v)", c.sql, got, got.SetBased(), c.want, c.setBased)
		}
	}
}
